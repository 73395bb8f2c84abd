// provider.js — the node-oidc-provider peer of scripts/bench-token.sh.
//
// A minimal OpenID provider on 127.0.0.1: one confidential client
// (client_secret_basic or client_secret_post, PKCE S256 required, response
// type code, scope openid), ID tokens signed in PEER_ALG (RS256 or PS256
// with an RSA-2048 key, ES256 with a P-256 key) generated at start, every
// model kept in process memory, and the
// library's built-in login and consent pages (devInteractions: any login
// with any password), driven over HTTP by `signd-load codes`.
//
// Environment: PEER_CLIENT_ID, PEER_CLIENT_SECRET_FILE (first line),
// PEER_REDIRECT_URI, PEER_CODE_TTL (seconds, default 600), PEER_PORT
// (default 0: any free port), PEER_ALG (default RS256). Prints "ready
// ISSUER" once listening.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const env = (name, fallback) => {
  const v = process.env[name] ?? fallback;
  if (v === undefined || v === '') throw new Error(`${name} is not set`);
  return v;
};

// MapAdapter keeps every model in one Map, without the size bound of the
// library's default in-memory adapter (an LRU of 1000 entries, which would
// evict codes minted ahead of the exchange).
const storage = new Map();
class MapAdapter {
  constructor(model) { this.model = model; }

  key(id) { return `${this.model}:${id}`; }

  get(key) {
    const e = storage.get(key);
    if (!e) return undefined;
    if (e.expiresAt && e.expiresAt <= Date.now()) {
      storage.delete(key);
      return undefined;
    }
    return e.value;
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = expiresIn ? Date.now() + expiresIn * 1000 : 0;
    storage.set(this.key(id), { value: payload, expiresAt });
    if (this.model === 'Session') storage.set(`sessionUid:${payload.uid}`, { value: id, expiresAt });
    if (payload.grantId) {
      const k = `grant:${payload.grantId}`;
      const members = this.get(k) ?? new Set();
      members.add(this.key(id));
      storage.set(k, { value: members, expiresAt: 0 });
    }
  }

  async find(id) { return this.get(this.key(id)); }

  async findByUid(uid) {
    const id = this.get(`sessionUid:${uid}`);
    return id === undefined ? undefined : this.find(id);
  }

  async findByUserCode() { return undefined; }

  async consume(id) {
    const payload = this.get(this.key(id));
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) { storage.delete(this.key(id)); }

  async revokeByGrantId(grantId) {
    const k = `grant:${grantId}`;
    for (const key of this.get(k) ?? []) storage.delete(key);
    storage.delete(k);
  }
}

const clientSecret = readFileSync(env('PEER_CLIENT_SECRET_FILE'), 'utf8').split('\n')[0].trim();
const alg = env('PEER_ALG', 'RS256');
if (!['RS256', 'PS256', 'ES256'].includes(alg)) throw new Error(`PEER_ALG ${alg}: want RS256, PS256 or ES256`);
const { privateKey } = alg === 'ES256'
  ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
  : generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), use: 'sig', alg, kid: `peer-${alg.toLowerCase()}` };
const codeTTL = Number(env('PEER_CODE_TTL', '600'));

const server = createServer();
server.keepAliveTimeout = 30_000;
server.listen(Number(env('PEER_PORT', '0')), '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    adapter: MapAdapter,
    clients: [{
      client_id: env('PEER_CLIENT_ID'),
      client_secret: clientSecret,
      redirect_uris: [env('PEER_REDIRECT_URI')],
      response_types: ['code'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: alg,
    }],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    // The pseudonymous sub only, as signd releases for scope openid.
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    pkce: { required: () => true },
    ttl: { AuthorizationCode: codeTTL, AccessToken: 3600, IdToken: 3600, Interaction: 600, Session: 28800, Grant: 28800 },
    features: { devInteractions: { enabled: true } },
  });
  server.on('request', provider.callback());
  console.log(`ready ${issuer}`);
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

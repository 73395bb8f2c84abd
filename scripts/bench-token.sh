#!/usr/bin/env bash
# bench-token.sh — the token-endpoint part of `make bench`: signd's
# authorization code → token exchange (ID token signed in the HSM, bbolt
# store) beside node-oidc-provider 9.x (in-memory), same load generator.
#
# Usage: [ALG=RS256|PS256|ES256] scripts/bench-token.sh
#
# ALG (default RS256) is the ID-token algorithm of both servers: signd's
# oidc.signing_alg (an RSA-2048 or EC P-256 key in the token), the peer's
# key and client; only exchanges whose ID token carries it are counted.
#
# In a temp directory (removed on exit, with both servers): a SoftHSM2 token,
# a config, a user with a verified email and an OIDC client (scope openid,
# PKCE required); `signd serve` on 127.0.0.1 generates its ALG signing key
# in the token on start. Beside it, scripts/bench-token/provider.js: one
# client with the same ID, secret and redirect URI, in-memory models, an
# ALG key, the library's built-in login and consent pages; `npm ci` installs
# the pinned version into the temp directory (npm cache: NPM_CACHE, default
# ./var/npm-cache). Then, after one uncounted warm-up round, ROUNDS
# (default 3) times, signd and the peer in alternation (the first one swaps
# each round):
#   (a) signd-load codes: N (default 2000) authorization code flows, scope
#       openid, PKCE S256, through the real authorization endpoint and its
#       login/consent pages, as a browser would; codes and verifiers to a
#       0600 file;
#   (b) signd-load token: the codes redeemed at the token endpoint with
#       client_secret_basic from C (default 16) keep-alive connections, for
#       at most LOAD_SECONDS (default 10) seconds.
# Printed: the medians of exchanges/s, p50 and p99 of both, and signd ÷ peer.
# Loopback only; MINT_SECONDS (default 60) bounds one minting run.
#
# SIGND_BIN names the signd binary to measure (default: bin/signd, built
# from this tree). SIGND_BASE_BIN names a second one, typically built from
# main: it runs beside the first with a token, store and port of its own,
# takes its turn in each round ("base"), and the summary adds signd ÷ base,
# so a change is measured against its base within one run (a base built
# before oidc.signing_alg existed runs only with ALG=RS256).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
conc=${C:-16}
count=${N:-2000}
secs=${LOAD_SECONDS:-10}
mint_secs=${MINT_SECONDS:-60}
alg=${ALG:-RS256}
case $alg in RS256 | PS256 | ES256) ;; *) echo "ALG=$alg: want RS256, PS256 or ES256" >&2; exit 2 ;; esac
npm_cache=${NPM_CACHE:-$PWD/var/npm-cache}
work=$(mktemp -d)
daemons=() peer=""
cleanup() {
  local p
  for p in "${daemons[@]}" $peer; do kill "$p" 2>/dev/null || true; done
  for p in "${daemons[@]}" $peer; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo
echo "# Token endpoint: signd vs node-oidc-provider 9.x, code → token exchanges, $alg ID tokens (ALG=$alg scripts/bench-token.sh)"
command -v node >/dev/null && command -v npm >/dev/null || { echo "bench-token.sh needs node and npm" >&2; exit 1; }
signd_bin=${SIGND_BIN:-}
base_bin=${SIGND_BASE_BIN:-}
if [ -z "$signd_bin" ]; then
  CGO_ENABLED=1 go build -o bin/signd ./cmd/signd
  signd_bin=bin/signd
fi
CGO_ENABLED=1 go build -o bin/signd-load ./cmd/signd-load

umask 077
# The peer, installed from the lock file into the temp directory.
mkdir -p "$work/peer" "$npm_cache"
cp scripts/bench-token/package.json scripts/bench-token/package-lock.json scripts/bench-token/provider.js "$work/peer/"
(cd "$work/peer" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error --cache "$npm_cache" >/dev/null)

# The shared client: same ID, secret and redirect URI on every server; the
# redirect URI is never visited (signd-load reads the code off the redirect).
client=bench-rp
redirect=https://bench.invalid/cb
openssl rand -hex 24 >"$work/client.secret"
openssl rand -hex 16 >"$work/password"

# shellcheck source=scripts/lib-bench.sh
. scripts/lib-bench.sh
# start_signd NAME BIN: in $work/NAME a SoftHSM2 token and a config
# (bench_config; base_url is the issuer and must name the port, so a free
# one is picked first), the user and the client; then `BIN serve`. Sets
# url_NAME.
start_signd() {
  local name=$1 bin=$2 dir=$work/$1 port cfg ready=""
  mkdir -p "$dir"
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  # The YAML goes on after bench_yaml's oidc: section, so its first line
  # is oidc.signing_alg; with RS256 it is left out (a base built before
  # the key existed accepts the file).
  local sig=""
  [ "$alg" = RS256 ] || sig="  signing_alg: $alg"
  bench_config "$dir" "127.0.0.1:$port" "http://127.0.0.1:$port" '""' warn "$sig
oauth:
  code_ttl: 10m"
  "$bin" --config "$cfg" user add bench --password-file "$work/password" --email bench@bench.invalid --email-verified >/dev/null
  "$bin" --config "$cfg" client add "$client" --redirect-uri "$redirect" --scope openid --require-pkce --secret-file "$work/client.secret" >/dev/null
  "$bin" --config "$cfg" serve 2>"$dir/signd.log" &
  daemons+=("$!")
  for _ in $(seq 1 100); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/.well-known/openid-configuration" 2>/dev/null; then ready=1; break; fi
    kill -0 "$!" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$ready" ] || { echo "$name did not start" >&2; cat "$dir/signd.log" >&2; exit 1; }
  printf -v "url_$name" '%s' "http://127.0.0.1:$port"
}
names=(signd)
start_signd signd "$signd_bin"
if [ -n "$base_bin" ]; then
  names+=(base)
  start_signd base "$base_bin"
fi

PEER_CLIENT_ID=$client PEER_CLIENT_SECRET_FILE=$work/client.secret PEER_REDIRECT_URI=$redirect PEER_CODE_TTL=600 PEER_ALG=$alg \
  node "$work/peer/provider.js" >"$work/peer.out" 2>"$work/peer.log" &
peer=$!
peer_url=""
for _ in $(seq 1 100); do
  peer_url=$(sed -n 's/^ready \(http:[^ ]*\)$/\1/p' "$work/peer.out" | head -n 1)
  [ -n "$peer_url" ] && break
  kill -0 "$peer" 2>/dev/null || break
  sleep 0.1
done
[ -n "$peer_url" ] || { echo "node-oidc-provider did not start" >&2; cat "$work/peer.log" >&2; exit 1; }
peer_version=$(node -p 'require(process.argv[1]).version' "$work/peer/node_modules/oidc-provider/package.json")

# one NAME URL [RUNS]: mint the codes, then redeem them; the result line
# goes to RUNS (default runs-NAME.txt).
one() {
  bin/signd-load codes --url "$2" --client "$client" --redirect-uri "$redirect" --user bench \
    --password-file "$work/password" --count "$count" --duration "${mint_secs}s" --out "$work/codes-$1.json" >/dev/null
  printf '%-6s ' "$1"
  bin/signd-load token --in "$work/codes-$1.json" --secret-file "$work/client.secret" \
    --concurrency "$conc" --duration "${secs}s" --alg "$alg" | tee -a "${3:-$work/runs-$1.txt}"
  rm -f "$work/codes-$1.json"
}
names+=(peer)
url_peer=$peer_url
echo "## signd ($signd_bin) at $url_signd${base_bin:+, base ($base_bin) at ${url_base:-}}, node-oidc-provider $peer_version (node $(node --version)) at $peer_url"
echo "## per round: bin/signd-load codes --count $count, then bin/signd-load token --concurrency $conc --duration ${secs}s; $rounds rounds, alternating"
# An uncounted round first: node's JIT compiler and the servers' caches
# warm up on the same flows.
echo "# warm-up round, not counted"
for n in "${names[@]}"; do u=url_$n; one "$n" "${!u}" /dev/null; done
# Each round starts one server later than the previous one.
k=${#names[@]}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $((k - 1))); do
    n=${names[$(((r - 1 + i) % k))]}; u=url_$n
    one "$n" "${!u}"
  done
done
bad=$(cat "$work"/signd/signd.log "$work"/base/signd.log 2>/dev/null | grep -c '"level":"ERROR"' || true)

# median over the rounds of key k in runs-NAME.txt.
val() { awk -v k="$2" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$work/runs-$1.txt" |
  sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo
echo "## medians of $rounds rounds, $(date -u +%Y-%m-%d), $(nproc) cores, c=$conc, $count codes per round"
printf '%-26s %14s %10s %10s\n' server "exchanges/s" p50 p99
printf '%-26s %14s %8sms %8sms\n' "signd (HSM $alg, bbolt)" "$(val signd rate)" "$(val signd p50_ms)" "$(val signd p99_ms)"
[ -z "$base_bin" ] || printf '%-26s %14s %8sms %8sms\n' "base signd" "$(val base rate)" "$(val base p50_ms)" "$(val base p99_ms)"
printf '%-26s %14s %8sms %8sms\n' "node-oidc-provider $peer_version" "$(val peer rate)" "$(val peer p50_ms)" "$(val peer p99_ms)"
awk -v a="$(val signd rate)" -v b="$(val peer rate)" 'BEGIN { printf "signd ÷ peer: %.2f\n", (b > 0 ? a / b : 0) }'
[ -z "$base_bin" ] || awk -v a="$(val base rate)" -v b="$(val peer rate)" 'BEGIN { printf "base ÷ peer: %.2f\n", (b > 0 ? a / b : 0) }'
[ -z "$base_bin" ] || awk -v a="$(val signd rate)" -v b="$(val base rate)" 'BEGIN { printf "signd ÷ base: %.2f\n", (b > 0 ? a / b : 0) }'
echo "errors logged by signd: $bad"

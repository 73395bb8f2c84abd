package oidc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// The ID-token signing algorithms: RS256, PS256 and ES256 (RFC 7518
// §3.3–3.5), the provider's default (oidc.signing_alg) and a client's
// id_token_signed_response_alg, checked by go-oidc, a verifier that is not
// signd's.

// idTokenHeader returns the protected header of a compact JWS, parsed by
// go-jose with only alg allowed.
func idTokenHeader(t *testing.T, raw, alg string) jose.Header {
	t.Helper()
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
	if err != nil {
		t.Fatalf("ID token is not a %s JWS: %v", alg, err)
	}
	return jws.Signatures[0].Header
}

// goOIDCVerify verifies raw as a relying party of client does with go-oidc:
// discovery with the exact issuer, the JWKS, and only algs accepted.
func (ev *flowEnv) goOIDCVerify(raw, client string, algs ...string) (*gooidc.IDToken, error) {
	ev.t.Helper()
	ctx := gooidc.ClientContext(context.Background(), ev.ts.Client())
	provider, err := gooidc.NewProvider(ctx, ev.issuer)
	if err != nil {
		ev.t.Fatal(err)
	}
	return provider.Verifier(&gooidc.Config{ClientID: client, Now: ev.clock.Now, SupportedSigningAlgs: algs}).Verify(ctx, raw)
}

// discoveryAlgs reads id_token_signing_alg_values_supported over HTTP.
func (ev *flowEnv) discoveryAlgs() []string {
	ev.t.Helper()
	rec := ev.do(http.MethodGet, "/.well-known/openid-configuration", "", "", nil)
	var md struct {
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &md); err != nil || rec.Code != http.StatusOK {
		ev.t.Fatalf("discovery: %d %v", rec.Code, err)
	}
	return md.Algs
}

// With oidc.signing_alg set to each algorithm, a relying party that
// registered none gets an ID token in it, which go-oidc verifies through
// discovery and the JWKS when it accepts only that algorithm and refuses
// when it accepts only another; discovery offers the default first and
// RS256 always (Discovery §3); at_hash verifies.
func TestIDTokenAlgorithmsGoOIDC(t *testing.T) {
	for _, alg := range store.JWSAlgorithms() {
		t.Run(alg, func(t *testing.T) {
			f := newFixture(t)
			f.keys.Algorithm = alg
			ev := newFlowEnvWith(t, f)
			if got, want := ev.discoveryAlgs(), slices.Compact([]string{alg, "RS256"}); !slices.Equal(got, want) {
				t.Errorf("id_token_signing_alg_values_supported = %v, want %v", got, want)
			}
			tr := ev.redeem("rp", ev.code("rp", "openid"))
			raw, _ := tr.Body["id_token"].(string)
			if tr.Status != http.StatusOK || raw == "" {
				t.Fatalf("token response %d %v", tr.Status, tr.Body)
			}
			h := idTokenHeader(t, raw, alg)
			active, err := f.keys.EnsureAlg(context.Background(), alg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h.Algorithm != alg || h.KeyID != active.KID || h.ExtraHeaders["typ"] != "JWT" {
				t.Errorf("header alg %q kid %q typ %v, want %s %s JWT", h.Algorithm, h.KeyID, h.ExtraHeaders["typ"], alg, active.KID)
			}
			idt, err := ev.goOIDCVerify(raw, "rp", alg)
			if err != nil {
				t.Fatalf("go-oidc: %v", err)
			}
			if err := idt.VerifyAccessToken(tr.Body["access_token"].(string)); err != nil {
				t.Errorf("at_hash: %v", err)
			}
			other := "ES256"
			if alg == "ES256" {
				other = "RS256"
			}
			if _, err := ev.goOIDCVerify(raw, "rp", other); err == nil {
				t.Errorf("go-oidc accepting only %s verified a %s token", other, alg)
			}
		})
	}
}

// A client registered with id_token_signed_response_alg ES256 gets ES256
// ID tokens while the default stays RS256 for the others; discovery offers
// both once the ES256 key is active.
func TestClientIDTokenAlg(t *testing.T) {
	ev := newFlowEnv(t)
	ctx := context.Background()
	if _, err := ev.keys.EnsureAlg(ctx, "ES256", nil); err != nil {
		t.Fatal(err)
	}
	ev.update(func(tx store.Tx) error {
		return tx.CreateClient(&store.Client{
			ID: "rp-es", Name: "ES256 RP", SecretHash: store.HashSecret(secretOf("rp-es")),
			RedirectURIs: []string{redirectOf("rp-es")}, Scopes: allScopes, IDTokenSignedResponseAlg: "ES256",
		})
	})
	if got := ev.discoveryAlgs(); !slices.Equal(got, []string{"RS256", "ES256"}) {
		t.Errorf("id_token_signing_alg_values_supported = %v", got)
	}
	for client, alg := range map[string]string{"rp-es": "ES256", "rp": "RS256"} {
		tr := ev.redeem(client, ev.code(client, "openid"))
		raw, _ := tr.Body["id_token"].(string)
		if h := idTokenHeader(t, raw, alg); h.Algorithm != alg {
			t.Errorf("%s: header alg %q, want %s", client, h.Algorithm, alg)
		}
		if _, err := ev.goOIDCVerify(raw, client, alg); err != nil {
			t.Errorf("%s: go-oidc (%s only): %v", client, alg, err)
		}
	}
}

// The JWKS holds one key per algorithm, each with kid (distinct), use sig
// and its alg: kty RSA with n and e for RS256 and PS256, kty EC with crv
// P-256, x and y of 32 bytes for ES256; no private member.
func TestJWKSShapePerAlgorithm(t *testing.T) {
	f := newFixture(t)
	f.keys.Algorithm = "PS256"
	ctx := context.Background()
	if _, err := f.keys.Ensure(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.keys.EnsureAlg(ctx, "ES256", nil); err != nil {
		t.Fatal(err)
	}
	rec := f.do(http.MethodGet, "/.well-known/jwks.json", "", "", nil)
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil {
		t.Fatal(err)
	}
	var algs, kidList []string
	for _, k := range set.Keys {
		alg, _ := k["alg"].(string)
		algs = append(algs, alg)
		kidList = append(kidList, fmt.Sprint(k["kid"]))
		if k["use"] != "sig" || k["kid"] == "" {
			t.Errorf("%s key: use %v kid %v", alg, k["use"], k["kid"])
		}
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
			if _, ok := k[private]; ok {
				t.Errorf("%s key publishes %q", alg, private)
			}
		}
		var members []string
		switch alg {
		case "RS256", "PS256":
			members = []string{"kty", "n", "e"}
			if k["kty"] != "RSA" {
				t.Errorf("%s key: kty %v", alg, k["kty"])
			}
		case "ES256":
			members = []string{"kty", "crv", "x", "y"}
			if k["kty"] != "EC" || k["crv"] != "P-256" {
				t.Errorf("ES256 key: kty %v crv %v", k["kty"], k["crv"])
			}
			for _, c := range []string{"x", "y"} {
				if s, _ := k[c].(string); len(s) != 43 { // 32 bytes, base64url without padding
					t.Errorf("ES256 key: %s %q is not 32 bytes", c, s)
				}
			}
		default:
			t.Errorf("key with alg %v", k["alg"])
		}
		for _, m := range members {
			if _, ok := k[m]; !ok {
				t.Errorf("%s key lacks %q", alg, m)
			}
		}
	}
	slices.Sort(algs)
	if !slices.Equal(algs, []string{"ES256", "PS256", "RS256"}) {
		t.Errorf("JWKS algorithms %v", algs)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(kidList)))) != len(kidList) {
		t.Errorf("kids not distinct: %v", kidList)
	}
}

// Each algorithm has its own life cycle: rotating ES256 retires only the
// ES256 key, RS256 keeps signing; switching oidc.signing_alg from RS256 to
// ES256 makes an ES256 key on start and keeps the RS256 key published and
// signing, so tokens issued before the switch still verify.
func TestRotationPerAlgorithm(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rs, err := f.keys.Ensure(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := f.signTest("n1")

	// The operator switches to ES256: a restart with the new setting.
	switched := &oidc.KeyRing{Store: f.keys.Store, HSM: f.keys.HSM, Algorithm: "ES256", IDTokenTTL: idTokenTTL, Now: f.clock.Now}
	es, err := switched.Ensure(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if es.Algorithm != "ES256" || es.State != store.SigningKeyActive {
		t.Fatalf("after the switch: %s %s", es.Algorithm, es.State)
	}
	f.p.Keys = switched
	if err := f.verify(before); err != nil {
		t.Errorf("an RS256 token from before the switch no longer verifies: %v", err)
	}
	if rs2, err := switched.EnsureAlg(ctx, "RS256", nil); err != nil || rs2.KID != rs.KID {
		t.Errorf("RS256 key after the switch: %v, %v (want %s still active)", rs2, err, rs.KID)
	}

	next, err := switched.Create(ctx, "", nil)
	if err != nil || next.Algorithm != "ES256" || next.State != store.SigningKeyNext {
		t.Fatalf("Create after the switch: %+v, %v", next, err)
	}
	if _, err := switched.Create(ctx, "ES256", nil); !errors.Is(err, oidc.ErrNextKeyExists) {
		t.Errorf("second next ES256 key: %v", err)
	}
	if _, err := switched.Rotate(ctx, "PS256", true, nil); !errors.Is(err, oidc.ErrNoNextKey) {
		t.Errorf("rotating PS256 without a PS256 key: %v", err)
	}
	rot, err := switched.Rotate(ctx, "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rot.Active.KID != next.KID || rot.Retired == nil || rot.Retired.KID != es.KID {
		t.Fatalf("rotation %+v", rot)
	}
	ks, err := switched.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, k := range ks {
		states[k.KID] = k.Algorithm + " " + string(k.State)
	}
	want := map[string]string{rs.KID: "RS256 active", es.KID: "ES256 retired", next.KID: "ES256 active"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("keys after rotating ES256: %v, want %v", states, want)
	}
	if got := kids(f.fetchJWKS()); len(got) != 3 {
		t.Errorf("JWKS kids %v: the retired ES256 key must stay published", got)
	}
}

// Only RS256, PS256 and ES256, spelt exactly, can sign or be created:
// "none", HMAC, lower case, padded and oversized names are refused before
// the HSM is asked.
func TestHostileAlgorithms(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.keys.Ensure(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"none", "None", "HS256", "HS512", "rs256", "es256", "RS256 ", "ES384", "EdDSA", strings.Repeat("A", 1000)} {
		if _, err := f.keys.Sign(ctx, alg, map[string]string{"sub": "a"}); !errors.Is(err, oidc.ErrUnknownAlgorithm) {
			t.Errorf("Sign(%.20q): %v", alg, err)
		}
		if _, err := f.keys.Create(ctx, alg, nil); !errors.Is(err, oidc.ErrUnknownAlgorithm) {
			t.Errorf("Create(%.20q): %v", alg, err)
		}
		if _, err := f.keys.EnsureAlg(ctx, alg, nil); !errors.Is(err, oidc.ErrUnknownAlgorithm) || len(err.Error()) > 200 {
			t.Errorf("EnsureAlg(%.20q): %.300v", alg, err)
		}
	}
	ks, err := f.keys.Keys(ctx)
	if err != nil || len(ks) != 1 {
		t.Errorf("keys after hostile requests: %d, %v", len(ks), err)
	}
}

// A token without the mechanism an algorithm needs (opencryptoki has no
// CKM_EC_KEY_PAIR_GEN; another token no CKM_RSA_PKCS_PSS) gives an
// *UnsupportedAlgorithmError naming the algorithm, the mechanism and the
// algorithms to choose instead, and leaves no key record behind.
func TestUnsupportedAlgorithm(t *testing.T) {
	mechInvalid := fmt.Errorf("C_GenerateKeyPair: %w", pkcs11.Error(pkcs11.CKR_MECHANISM_INVALID))
	// What hsm answers once it refuses a key type the token lacks by name.
	byName := fmt.Errorf("%w: EC keys (the token has no CKM_EC_KEY_PAIR_GEN)", hsm.ErrUnsupportedAlgorithm)
	tests := []struct {
		alg, op, mech, want string
		err                 error
	}{
		{"ES256", softtoken.OpGenerateEC, "CKM_EC_KEY_PAIR_GEN", "ES256 needs CKM_EC_KEY_PAIR_GEN, which the token lacks; choose RS256 or PS256", mechInvalid},
		{"ES256", softtoken.OpGenerateEC, "CKM_EC_KEY_PAIR_GEN", "ES256 needs CKM_EC_KEY_PAIR_GEN, which the token lacks; choose RS256 or PS256", byName},
		{"PS256", softtoken.OpSignDigest, "CKM_RSA_PKCS_PSS", "PS256 needs CKM_RSA_PKCS_PSS, which the token lacks; choose RS256 or ES256", mechInvalid},
		{"RS256", softtoken.OpGenerateRSA, "CKM_RSA_PKCS_KEY_PAIR_GEN", "RS256 needs CKM_RSA_PKCS_KEY_PAIR_GEN, which the token lacks; choose ES256", mechInvalid},
	}
	for _, tt := range tests {
		how := "CKR_MECHANISM_INVALID"
		if tt.err == byName {
			how = "refused by hsm"
		}
		t.Run(tt.alg+" "+how, func(t *testing.T) {
			tok := softtoken.New(softtoken.Options{})
			tok.FailAlways(tt.op, tt.err)
			ring := &oidc.KeyRing{Store: keyRingStore(memoryStore(t)), HSM: tok, Algorithm: tt.alg, IDTokenTTL: idTokenTTL}
			_, err := ring.EnsureAlg(context.Background(), "", nil)
			if err == nil {
				_, err = ring.Sign(context.Background(), "", map[string]string{"sub": "a"})
			}
			var u *oidc.UnsupportedAlgorithmError
			if !errors.As(err, &u) || u.Algorithm != tt.alg || u.Mechanism != tt.mech {
				t.Fatalf("err = %v, want an UnsupportedAlgorithmError for %s", err, tt.mech)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.err.Error()) {
				t.Errorf("message %q lacks %q", err, tt.want)
			}
			if tt.op != softtoken.OpSignDigest {
				if ks, _ := ring.Keys(context.Background()); len(ks) != 0 {
					t.Errorf("%d key records after a refused generation", len(ks))
				}
			}
		})
	}
}

package oidc_test

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// fetchJWKS gets the JWKS over HTTP.
func (f *fixture) fetchJWKS() jose.JSONWebKeySet {
	f.t.Helper()
	rec := f.do(http.MethodGet, "/.well-known/jwks.json", "", "", nil)
	if rec.Code != http.StatusOK {
		f.t.Fatalf("JWKS status %d: %s", rec.Code, rec.Body)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil {
		f.t.Fatal(err)
	}
	return set
}

func kids(set jose.JSONWebKeySet) []string {
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.KeyID)
	}
	return out
}

// signTest signs an ID token for a fixed user with the active key.
func (f *fixture) signTest(nonce string) string {
	f.t.Helper()
	tok, err := f.p.Sign(context.Background(), oidc.IDToken{
		ClientID: "rp", Subject: "sub-1", AuthTime: f.clock.Now().Add(-time.Minute), Nonce: nonce, AccessToken: "at",
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

// verify checks an ID token's signature against the published JWKS, as a
// relying party does: by kid, RS256 only.
func (f *fixture) verify(idToken string) error {
	jws, err := jose.ParseSignedCompact(idToken, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return err
	}
	kid := jws.Signatures[0].Header.KeyID
	set := f.fetchJWKS()
	keys := set.Key(kid)
	if len(keys) != 1 {
		return errors.New("kid " + kid + " is not published")
	}
	_, err = jws.Verify(keys[0].Key)
	return err
}

// Item 2 of reference/oidc.md §8: unique kid, use sig, alg RS256, RSA
// >= 2048, kid = RFC 7638 thumbprint, the ID token header carries kid.
func TestItem02JWKS(t *testing.T) {
	f := newFixture(t)
	if set := f.fetchJWKS(); len(set.Keys) != 0 {
		t.Fatalf("JWKS before any key: %v", kids(set))
	}
	active, err := f.keys.Ensure(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if active.State != store.SigningKeyActive {
		t.Fatalf("first key is %s, want active", active.State)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.keys.Create(context.Background(), "", nil); err != nil {
		t.Fatal(err)
	}
	set := f.fetchJWKS()
	if len(set.Keys) != 2 {
		t.Fatalf("JWKS has %d keys, want 2 (active and next)", len(set.Keys))
	}
	seen := map[string]bool{}
	for _, k := range set.Keys {
		if k.KeyID == "" || seen[k.KeyID] {
			t.Errorf("kid %q missing or not unique", k.KeyID)
		}
		seen[k.KeyID] = true
		if k.Use != "sig" || k.Algorithm != "RS256" || !k.IsPublic() || !k.Valid() {
			t.Errorf("key %s: use %q alg %q public %v", k.KeyID, k.Use, k.Algorithm, k.IsPublic())
		}
		pub, ok := k.Key.(*rsa.PublicKey)
		if !ok || pub.N.BitLen() < 2048 {
			t.Errorf("key %s is not RSA >= 2048", k.KeyID)
			continue
		}
		if tp, _ := oidc.Thumbprint(pub); tp != k.KeyID {
			t.Errorf("kid %s is not the RFC 7638 thumbprint %s", k.KeyID, tp)
		}
	}
	// The ID token names the active key, never the next one.
	idToken := f.signTest("")
	jws, err := jose.ParseSignedCompact(idToken, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	if h := jws.Signatures[0].Header; h.KeyID != active.KID || h.Algorithm != "RS256" {
		t.Errorf("header kid %q alg %q, want %q RS256", h.KeyID, h.Algorithm, active.KID)
	}
	if typ := jws.Signatures[0].Protected.ExtraHeaders["typ"]; typ != "JWT" {
		t.Errorf("typ = %v", typ)
	}
	if err := f.verify(idToken); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// Item 2 and the key-rotation acceptance test: a new key is published
// before it signs; tokens signed before a rotation verify against the
// published JWKS until they expire; the retired key then leaves the JWKS
// and the HSM.
func TestItem02KeyRotation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, err := f.keys.Ensure(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := f.keys.Ensure(ctx, nil); err != nil || again.KID != first.KID {
		t.Fatalf("second Ensure = %v, %v; want the same key", again, err)
	}
	if _, err := f.keys.Rotate(ctx, "", false, nil); !errors.Is(err, oidc.ErrNoNextKey) {
		t.Fatalf("Rotate without next key = %v, want ErrNoNextKey", err)
	}
	next, err := f.keys.Create(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if next.State != store.SigningKeyNext {
		t.Fatalf("created key is %s, want next", next.State)
	}
	if _, err := f.keys.Create(ctx, "", nil); !errors.Is(err, oidc.ErrNextKeyExists) {
		t.Fatalf("second Create = %v, want ErrNextKeyExists", err)
	}
	// Published, but not yet signing.
	if got := kids(f.fetchJWKS()); len(got) != 2 {
		t.Fatalf("JWKS = %v, want both keys", got)
	}
	before := f.signTest("n-before")
	if _, err := f.keys.Rotate(ctx, "", false, nil); !errors.Is(err, oidc.ErrNextKeyTooNew) {
		t.Fatalf("Rotate right away = %v, want ErrNextKeyTooNew", err)
	}

	f.clock.Advance(oidc.DefaultPrePublish)
	rot, err := f.keys.Rotate(ctx, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rot.Active.KID != next.KID || rot.Retired == nil || rot.Retired.KID != first.KID {
		t.Fatalf("rotation = %+v", rot)
	}
	after := f.signTest("n-after")
	hdrKid := func(tok string) string {
		jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256})
		if err != nil {
			t.Fatal(err)
		}
		return jws.Signatures[0].Header.KeyID
	}
	if hdrKid(before) != first.KID || hdrKid(after) != next.KID {
		t.Errorf("kids before/after rotation: %s, %s", hdrKid(before), hdrKid(after))
	}
	// Until the last token of the old key has expired (plus leeway), both verify.
	for _, d := range []time.Duration{0, idTokenTTL - time.Second, oidc.DefaultRetireLeeway} {
		f.clock.Advance(d)
		if err := f.verify(before); err != nil {
			t.Errorf("token signed before the rotation, %v later: %v", d, err)
		}
		if err := f.verify(after); err != nil {
			t.Errorf("token signed after the rotation: %v", err)
		}
	}
	purged, err := f.keys.Purge(ctx, nil)
	if err != nil || len(purged) != 0 {
		t.Fatalf("Purge inside the window = %v, %v", purged, err)
	}
	f.clock.Advance(time.Second) // retired_at + TTL + leeway has passed
	if got := kids(f.fetchJWKS()); len(got) != 1 || got[0] != next.KID {
		t.Errorf("JWKS after expiry = %v, want only %s", got, next.KID)
	}
	purged, err = f.keys.Purge(ctx, nil)
	if err != nil || len(purged) != 1 || purged[0] != first.KID {
		t.Fatalf("Purge = %v, %v", purged, err)
	}
	if _, err := token.Key(ctx, first.KeyID); !errors.Is(err, hsm.ErrKeyNotFound) {
		t.Errorf("retired HSM key after purge: %v", err)
	}
	if ks, _ := f.keys.Keys(ctx); len(ks) != 1 {
		t.Errorf("records after purge: %d", len(ks))
	}
}

func TestRotateForce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.keys.Ensure(ctx, nil); err != nil {
		t.Fatal(err)
	}
	next, err := f.keys.Create(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	rot, err := f.keys.Rotate(ctx, "", true, nil)
	if err != nil || rot.Active.KID != next.KID {
		t.Fatalf("forced Rotate = %+v, %v", rot, err)
	}
}

// Create without an active key (a fresh store, before the daemon ever ran)
// makes the key active at once; Ensure promotes a lone next key.
func TestFirstKeyActive(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k, err := f.keys.Create(ctx, "", nil)
	if err != nil || k.State != store.SigningKeyActive || !k.ActivatedAt.Equal(k.CreatedAt) {
		t.Fatalf("first Create = %+v, %v", k, err)
	}
	// A next key whose active key vanished (admin deleted the record) is
	// promoted by Ensure.
	n, err := f.keys.Create(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.update(func(tx store.Tx) error { return tx.DeleteSigningKey(k.KID) })
	_ = token.DestroyKey(ctx, k.KeyID)
	got, err := f.keys.Ensure(ctx, nil)
	if err != nil || got.KID != n.KID || got.State != store.SigningKeyActive {
		t.Fatalf("Ensure = %+v, %v", got, err)
	}
}

func TestSignWithoutKey(t *testing.T) {
	f := newFixture(t)
	_, err := f.p.Sign(context.Background(), oidc.IDToken{ClientID: "rp", Subject: "s", AuthTime: time.Now()})
	if !errors.Is(err, oidc.ErrNoSigningKey) {
		t.Errorf("Sign = %v, want ErrNoSigningKey", err)
	}
}

// TestSignRefusesAnotherHSMKey: when the HSM ID of the active key names
// another key pair, no token is signed under the published kid.
func TestSignRefusesAnotherHSMKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	active, err := f.keys.Ensure(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := token.GenerateRSA(ctx, "oidc-test-other-"+active.KID, 2048)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = token.DestroyKey(ctx, other.ID) })
	if jws, err := f.keys.Sign(ctx, "", map[string]any{"sub": "a"}); err != nil || jws == "" {
		t.Fatalf("Sign with the right key: %q, %v", jws, err)
	}
	f.update(func(tx store.Tx) error { // a record the store would refuse to change
		if err := tx.DeleteSigningKey(active.KID); err != nil {
			return err
		}
		active.KeyID = other.ID
		return tx.CreateSigningKey(active)
	})
	jws, err := f.keys.Sign(ctx, "", map[string]any{"sub": "a"})
	if err == nil || jws != "" || !strings.Contains(err.Error(), "is not the published key") {
		t.Errorf("Sign with another HSM key under the published kid: %q, %v", jws, err)
	}
}

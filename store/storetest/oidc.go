package storetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// OIDC signing keys.

// publicKeyDER returns a fresh PKIX public key. The store only parses it,
// so a quick P-256 key stands in for the RSA keys the provider uses.
func publicKeyDER() []byte {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		panic(err)
	}
	return der
}

func newSigningKey(kid string, created time.Time) *store.SigningKey {
	return &store.SigningKey{
		KID: kid, KeyID: []byte("hsm-" + kid), Label: "signd-oidc-" + kid, Algorithm: store.JWSES256,
		PublicKey: publicKeyDER(), State: store.SigningKeyNext, CreatedAt: created,
	}
}

func signingKeys(t *testing.T, s store.Store) []store.SigningKey {
	t.Helper()
	var ks []store.SigningKey
	view(t, s, func(tx store.Tx) (err error) { ks, err = tx.SigningKeys(); return err })
	return ks
}

func testSigningKeys(t *testing.T, s store.Store) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if ks := signingKeys(t, s); len(ks) != 0 {
		t.Fatalf("empty store has keys %v", ks)
	}
	// Created out of order: listed by creation time.
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateSigningKey(newSigningKey("kid-b", t0.Add(time.Hour))); err != nil {
			return err
		}
		a := newSigningKey("kid-a", t0)
		a.State, a.ActivatedAt = store.SigningKeyActive, t0
		return tx.CreateSigningKey(a)
	})
	ks := signingKeys(t, s)
	if len(ks) != 2 || ks[0].KID != "kid-a" || ks[1].KID != "kid-b" {
		t.Fatalf("SigningKeys = %+v, want kid-a, kid-b", ks)
	}
	if ks[0].State != store.SigningKeyActive || !ks[0].ActivatedAt.Equal(t0) || !ks[1].ActivatedAt.IsZero() ||
		string(ks[1].KeyID) != "hsm-kid-b" || ks[1].Label != "signd-oidc-kid-b" || !ks[1].CreatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("SigningKeys = %+v", ks)
	}

	// Rotate in one transaction.
	update(t, s, func(tx store.Tx) error {
		a, b := ks[0], ks[1]
		a.State, a.RetiredAt = store.SigningKeyRetired, t0.Add(2*time.Hour)
		b.State, b.ActivatedAt = store.SigningKeyActive, t0.Add(2*time.Hour)
		if err := tx.PutSigningKey(&a); err != nil {
			return err
		}
		return tx.PutSigningKey(&b)
	})
	ks = signingKeys(t, s)
	if ks[0].State != store.SigningKeyRetired || !ks[0].RetiredAt.Equal(t0.Add(2*time.Hour)) ||
		ks[1].State != store.SigningKeyActive {
		t.Errorf("after rotation: %+v", ks)
	}

	// Errors.
	errs := []struct {
		name string
		fn   func(tx store.Tx) error
		want error
	}{
		{"create twice", func(tx store.Tx) error { return tx.CreateSigningKey(newSigningKey("kid-b", t0)) }, store.ErrAlreadyExists},
		{"put missing", func(tx store.Tx) error { return tx.PutSigningKey(newSigningKey("kid-x", t0)) }, store.ErrNotFound},
		{"delete missing", func(tx store.Tx) error { return tx.DeleteSigningKey("kid-x") }, store.ErrNotFound},
		{"change HSM key", func(tx store.Tx) error {
			k := ks[1]
			k.KeyID = []byte("other")
			return tx.PutSigningKey(&k)
		}, store.ErrInvalid},
		{"change creation time", func(tx store.Tx) error {
			k := ks[1]
			k.CreatedAt = k.CreatedAt.Add(time.Second)
			return tx.PutSigningKey(&k)
		}, store.ErrInvalid},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Update(context.Background(), tt.fn); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	err := s.View(context.Background(), func(tx store.Tx) error { return tx.CreateSigningKey(newSigningKey("kid-c", t0)) })
	if !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("CreateSigningKey in View = %v, want ErrReadOnly", err)
	}

	update(t, s, func(tx store.Tx) error { return tx.DeleteSigningKey("kid-a") })
	if ks := signingKeys(t, s); len(ks) != 1 || ks[0].KID != "kid-b" {
		t.Errorf("after delete: %+v", ks)
	}
}

func testInvalidSigningKeys(t *testing.T, s store.Store) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		mod  func(k *store.SigningKey)
	}{
		{"empty kid", func(k *store.SigningKey) { k.KID = "" }},
		{"kid with space", func(k *store.SigningKey) { k.KID = "a b" }},
		{"no HSM key ID", func(k *store.SigningKey) { k.KeyID = nil }},
		{"long HSM key ID", func(k *store.SigningKey) { k.KeyID = make([]byte, 65) }},
		{"algorithm", func(k *store.SigningKey) { k.Algorithm = "HS256" }},
		{"algorithm none", func(k *store.SigningKey) { k.Algorithm = "none" }},
		{"algorithm lower case", func(k *store.SigningKey) { k.Algorithm = "es256" }},
		{"EC key for RS256", func(k *store.SigningKey) { k.Algorithm = store.JWSRS256 }},
		{"EC key for PS256", func(k *store.SigningKey) { k.Algorithm = store.JWSPS256 }},
		{"public key", func(k *store.SigningKey) { k.PublicKey = []byte("nope") }},
		{"no creation time", func(k *store.SigningKey) { k.CreatedAt = time.Time{} }},
		{"unknown state", func(k *store.SigningKey) { k.State = "old" }},
		{"next with activation", func(k *store.SigningKey) { k.ActivatedAt = t0 }},
		{"active without activation", func(k *store.SigningKey) { k.State = store.SigningKeyActive }},
		{"active with retirement", func(k *store.SigningKey) {
			k.State, k.ActivatedAt, k.RetiredAt = store.SigningKeyActive, t0, t0
		}},
		{"retired without retirement", func(k *store.SigningKey) {
			k.State, k.ActivatedAt = store.SigningKeyRetired, t0
		}},
		{"label with control character", func(k *store.SigningKey) { k.Label = "a\nb" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newSigningKey("kid-1", t0)
			tt.mod(k)
			err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateSigningKey(k) })
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("CreateSigningKey = %v, want ErrInvalid", err)
			}
		})
	}
}

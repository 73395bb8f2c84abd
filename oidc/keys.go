package oidc

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// KeyStore is what the KeyRing needs of the HSM: generate, sign with and
// destroy RSA keys named by their HSM ID. *hsm.Token satisfies it, and so
// does the software token of the unit tests (hsm/hsmtest/softtoken).
type KeyStore interface {
	GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error)
	// SignDigest makes an RSA PKCS#1 v1.5 signature over a DigestInfo of
	// digest with the key whose HSM ID is id.
	SignDigest(ctx context.Context, id []byte, hash crypto.Hash, digest []byte) ([]byte, error)
	DestroyKey(ctx context.Context, id []byte) error
}

// Key life-cycle defaults.
const (
	// KeyBits is the size of the RSA keys the KeyRing generates.
	KeyBits = 2048
	// DefaultPrePublish is how long a next key is published before Rotate
	// lets it sign. Relying parties cache the JWKS (oauth4webapi five
	// minutes; go-oidc until it meets an unknown kid).
	DefaultPrePublish = 10 * time.Minute
	// DefaultRetireLeeway is added to the ID-token lifetime before a
	// retired key leaves the JWKS: relying parties tolerate some clock
	// skew on exp.
	DefaultRetireLeeway = 5 * time.Minute
	// Algorithm is the one JWS algorithm signd signs ID tokens with.
	Algorithm = "RS256"
)

// Errors of the key life cycle. The admin layer turns them into operator
// errors (conflicts).
var (
	// ErrNoSigningKey: no key is active; the daemon creates one on start.
	ErrNoSigningKey = errors.New("oidc: no active signing key")
	// ErrNextKeyExists: Create found a next key already published.
	ErrNextKeyExists = errors.New("oidc: a next signing key is already published")
	// ErrNoNextKey: Rotate found no next key to promote.
	ErrNoNextKey = errors.New("oidc: no next signing key to promote")
	// ErrNextKeyTooNew: Rotate found the next key published for less than
	// the pre-publication time.
	ErrNextKeyTooNew = errors.New("oidc: the next signing key was published too recently")
)

// KeyRing manages the ID-token signing keys. The key records (state, times,
// public key) live in the store, so every process agrees on which key signs
// and which are only published; the private keys live in the HSM.
//
// Life cycle: a key is created "next" (published in the JWKS, not signing),
// Rotate promotes it to "active" (signing) once it has been published for
// PrePublish and retires the previously active key; a retired key stays in
// the JWKS until RetiredAt + IDTokenTTL + RetireLeeway (every ID token it
// signed has expired by then) and is then destroyed by Purge. The very
// first key of a provider is active at once: there is nothing a relying
// party could have cached.
type KeyRing struct {
	Store KeyRingStore
	HSM   KeyStore
	// IDTokenTTL is the ID-token lifetime (oidc.id_token_ttl).
	IDTokenTTL time.Duration
	// PrePublish is how long a next key is published before it may sign;
	// 0 means DefaultPrePublish.
	PrePublish time.Duration
	// RetireLeeway is added to IDTokenTTL for retired keys; 0 means
	// DefaultRetireLeeway.
	RetireLeeway time.Duration
	Now          func() time.Time // nil = time.Now
	Logger       *slog.Logger     // nil = discard

	// active is the active key prepared for signing, rebuilt when Sign
	// finds another active record in the store.
	active atomic.Pointer[signingKey]
}

func (r *KeyRing) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC().Round(0)
	}
	return time.Now().UTC().Round(0)
}

func (r *KeyRing) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (r *KeyRing) prePublish() time.Duration {
	if r.PrePublish > 0 {
		return r.PrePublish
	}
	return DefaultPrePublish
}

func (r *KeyRing) retireLeeway() time.Duration {
	if r.RetireLeeway > 0 {
		return r.RetireLeeway
	}
	return DefaultRetireLeeway
}

// PublishedUntil returns when a key stops being published: never (zero) for
// next and active keys, RetiredAt + IDTokenTTL + RetireLeeway for retired
// ones.
func (r *KeyRing) PublishedUntil(k *store.SigningKey) time.Time {
	if k.State != store.SigningKeyRetired {
		return time.Time{}
	}
	return k.RetiredAt.Add(r.IDTokenTTL + r.retireLeeway())
}

// published reports whether k belongs in the JWKS at now.
func (r *KeyRing) published(k *store.SigningKey, now time.Time) bool {
	until := r.PublishedUntil(k)
	return until.IsZero() || now.Before(until)
}

// Thumbprint returns the RFC 7638 JWK thumbprint (SHA-256, base64url) of
// pub: signd's kid.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// Keys returns every key record, oldest first.
func (r *KeyRing) Keys(ctx context.Context) ([]store.SigningKey, error) {
	var ks []store.SigningKey
	err := r.Store.View(ctx, func(tx store.OIDCTx) (err error) {
		ks, err = tx.SigningKeys()
		return err
	})
	return ks, err
}

// Ensure makes sure a key is active: on a fresh provider it generates the
// first key and activates it at once; when only a next key exists it
// promotes that one. It reports the active key. Several daemons on one
// shared store may start at once: when another one publishes or promotes
// a key first, Ensure destroys the key it generated itself and reports
// the key that won, instead of publishing a second one.
func (r *KeyRing) Ensure(ctx context.Context) (*store.SigningKey, error) {
	for attempt := 1; ; attempt++ {
		k, err := r.ensureOnce(ctx)
		if attempt < ensureAttempts && (errors.Is(err, errKeyAppeared) || errors.Is(err, ErrNoNextKey)) {
			continue
		}
		return k, err
	}
}

// ensureAttempts bounds Ensure's rereads after losing a race to another
// daemon: each lost race means a key now exists, so the next read finds it.
const ensureAttempts = 4

// errKeyAppeared: Ensure's first key lost the race to a key another daemon
// published meanwhile.
var errKeyAppeared = errors.New("oidc: another daemon published a signing key first")

func (r *KeyRing) ensureOnce(ctx context.Context) (*store.SigningKey, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	if k := find(ks, store.SigningKeyActive); k != nil {
		return k, nil
	}
	if k := find(ks, store.SigningKeyNext); k != nil {
		return r.promote(ctx, k.KID, true)
	}
	return r.create(ctx, true)
}

func find(ks []store.SigningKey, state store.SigningKeyState) *store.SigningKey {
	for i := len(ks) - 1; i >= 0; i-- {
		if ks[i].State == state {
			return &ks[i]
		}
	}
	return nil
}

// Create generates a key pair in the HSM and publishes it as the next key;
// when no key is active yet, the new key is active at once. A second next
// key is refused (ErrNextKeyExists): rotate first. If the store write fails
// the HSM key is destroyed again.
func (r *KeyRing) Create(ctx context.Context) (*store.SigningKey, error) {
	return r.create(ctx, false)
}

// create is Create; first (Ensure) publishes the key only while the store
// holds no active and no next key, and otherwise gives errKeyAppeared.
func (r *KeyRing) create(ctx context.Context, first bool) (*store.SigningKey, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	if k := find(ks, store.SigningKeyNext); k != nil {
		return nil, fmt.Errorf("%w: %s (published %s)", ErrNextKeyExists, k.KID, k.CreatedAt.Format(time.RFC3339))
	}
	id, err := store.NewID()
	if err != nil {
		return nil, err
	}
	info, err := r.HSM.GenerateRSA(ctx, "signd-oidc-"+id, KeyBits)
	if err != nil {
		return nil, fmt.Errorf("oidc: generate signing key: %w", err)
	}
	k, err := newSigningKey(info, r.now())
	if err == nil {
		err = r.Store.Update(ctx, func(tx store.OIDCTx) error {
			cur, err := tx.SigningKeys()
			if err != nil {
				return err
			}
			if first && (find(cur, store.SigningKeyActive) != nil || find(cur, store.SigningKeyNext) != nil) {
				return errKeyAppeared
			}
			if n := find(cur, store.SigningKeyNext); n != nil {
				return fmt.Errorf("%w: %s", ErrNextKeyExists, n.KID)
			}
			if find(cur, store.SigningKeyActive) == nil {
				k.State, k.ActivatedAt = store.SigningKeyActive, k.CreatedAt
			}
			return tx.CreateSigningKey(k)
		})
	}
	if err != nil {
		if derr := r.HSM.DestroyKey(context.WithoutCancel(ctx), info.ID); derr != nil {
			r.log().Error("oidc: destroying the unused signing key failed", "key_id", fmt.Sprintf("%x", info.ID), "label", info.Label, "err", derr)
		}
		return nil, err
	}
	r.log().Info("oidc: signing key created", "kid", k.KID, "state", k.State, "label", k.Label)
	return k, nil
}

func newSigningKey(info *hsm.KeyInfo, now time.Time) (*store.SigningKey, error) {
	kid, err := Thumbprint(info.Public)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(info.Public)
	if err != nil {
		return nil, err
	}
	return &store.SigningKey{
		KID: kid, KeyID: info.ID, Label: info.Label, Algorithm: Algorithm,
		PublicKey: der, State: store.SigningKeyNext, CreatedAt: now,
	}, nil
}

// Rotation is the outcome of Rotate.
type Rotation struct {
	Active  store.SigningKey  // the key that signs from now on
	Retired *store.SigningKey // the key that stopped signing; nil if none was active
	Purged  []string          // KIDs of retired keys removed because their tokens expired
}

// Rotate promotes the next key to active and retires the active one. The
// next key must have been published for PrePublish (ErrNextKeyTooNew)
// unless force is set; without a next key it fails with ErrNoNextKey.
// Afterwards it purges retired keys whose tokens have all expired.
func (r *KeyRing) Rotate(ctx context.Context, force bool) (*Rotation, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	next := find(ks, store.SigningKeyNext)
	if next == nil {
		return nil, ErrNoNextKey
	}
	if ready := next.CreatedAt.Add(r.prePublish()); !force && r.now().Before(ready) {
		return nil, fmt.Errorf("%w: %s signs from %s on", ErrNextKeyTooNew, next.KID, ready.Format(time.RFC3339))
	}
	old := find(ks, store.SigningKeyActive)
	active, err := r.promote(ctx, next.KID, force)
	if err != nil {
		return nil, err
	}
	rot := &Rotation{Active: *active}
	if old != nil {
		old.State, old.RetiredAt = store.SigningKeyRetired, active.ActivatedAt
		rot.Retired = old
	}
	if rot.Purged, err = r.Purge(ctx); err != nil {
		return rot, err
	}
	return rot, nil
}

// promote makes the next key kid active and retires the active key, in one
// transaction.
func (r *KeyRing) promote(ctx context.Context, kid string, force bool) (*store.SigningKey, error) {
	now := r.now()
	var out *store.SigningKey
	err := r.Store.Update(ctx, func(tx store.OIDCTx) error {
		ks, err := tx.SigningKeys()
		if err != nil {
			return err
		}
		next := find(ks, store.SigningKeyNext)
		if next == nil || next.KID != kid {
			return ErrNoNextKey // another rotation won the race
		}
		if !force && now.Before(next.CreatedAt.Add(r.prePublish())) && find(ks, store.SigningKeyActive) != nil {
			return fmt.Errorf("%w: %s", ErrNextKeyTooNew, kid)
		}
		for i := range ks {
			if ks[i].State == store.SigningKeyActive {
				ks[i].State, ks[i].RetiredAt = store.SigningKeyRetired, now
				if err := tx.PutSigningKey(&ks[i]); err != nil {
					return err
				}
			}
		}
		next.State, next.ActivatedAt = store.SigningKeyActive, now
		out = next
		return tx.PutSigningKey(next)
	})
	if err != nil {
		return nil, err
	}
	r.log().Info("oidc: signing key activated", "kid", out.KID)
	return out, nil
}

// Purge destroys the retired keys whose ID tokens have all expired (see
// PublishedUntil) and removes their records. A key already gone from the
// HSM is removed from the store all the same.
func (r *KeyRing) Purge(ctx context.Context) ([]string, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	now := r.now()
	var purged []string
	for i := range ks {
		k := &ks[i]
		if k.State != store.SigningKeyRetired || r.published(k, now) {
			continue
		}
		if err := r.HSM.DestroyKey(ctx, k.KeyID); err != nil && !errors.Is(err, hsm.ErrKeyNotFound) {
			return purged, fmt.Errorf("oidc: destroy retired signing key %s: %w", k.KID, err)
		}
		err := r.Store.Update(ctx, func(tx store.OIDCTx) error { return tx.DeleteSigningKey(k.KID) })
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return purged, err
		}
		r.log().Info("oidc: retired signing key purged", "kid", k.KID)
		purged = append(purged, k.KID)
	}
	return purged, nil
}

// JWKS returns the published public keys: next, active and retired keys
// whose tokens may still be valid, each with kid, use "sig" and alg RS256.
func (r *KeyRing) JWKS(ctx context.Context) (*jose.JSONWebKeySet, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	now := r.now()
	set := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for i := range ks {
		if !r.published(&ks[i], now) {
			continue
		}
		jwk, err := publicJWK(&ks[i])
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, *jwk)
	}
	return set, nil
}

func publicJWK(k *store.SigningKey) (*jose.JSONWebKey, error) {
	pub, err := x509.ParsePKIXPublicKey(k.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("oidc: signing key %s: %w", k.KID, err)
	}
	if _, ok := pub.(*rsa.PublicKey); !ok {
		return nil, fmt.Errorf("oidc: signing key %s is not RSA", k.KID)
	}
	return &jose.JSONWebKey{Key: pub, KeyID: k.KID, Algorithm: k.Algorithm, Use: "sig"}, nil
}

// available reports whether the HSM can be asked to sign: false while an
// *hsm.Token reports itself unavailable (reconnecting, PIN refused,
// closed). It calls nothing in the HSM, so it may run inside a store
// transaction. A KeyStore that cannot tell is assumed available.
func (r *KeyRing) available() bool {
	if a, ok := r.HSM.(interface{ Available() bool }); ok {
		return a.Available()
	}
	return true
}

// Sign signs claims (marshalled to JSON) as a compact JWS with the active
// key: header alg RS256, typ JWT, kid. The signature is made in the HSM;
// ctx bounds the wait for an HSM session. The key records are read on
// every call (the store decides which key signs); the parsed public key
// and the header are built once per active record.
func (r *KeyRing) Sign(ctx context.Context, claims any) (string, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return "", err
	}
	active := find(ks, store.SigningKeyActive)
	if active == nil {
		return "", ErrNoSigningKey
	}
	sk := r.active.Load()
	if sk == nil || !sk.matches(active) {
		if sk, err = newSigningKeyFor(active); err != nil {
			return "", err
		}
		r.active.Store(sk)
	}
	return sk.sign(ctx, r.HSM, claims)
}

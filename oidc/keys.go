package oidc

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// KeyStore is what the KeyRing needs of the HSM: generate, sign with and
// destroy RSA and EC keys named by their HSM ID. *hsm.Token satisfies it,
// and so does the software token of the unit tests
// (hsm/hsmtest/softtoken).
type KeyStore interface {
	GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error)
	GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*hsm.KeyInfo, error)
	// SignDigestOpts signs digest with the key whose HSM ID is id: RSA
	// PKCS#1 v1.5 (opts a crypto.Hash), RSASSA-PSS (opts *rsa.PSSOptions)
	// or ECDSA with a DER ECDSA-Sig-Value (an EC key).
	SignDigestOpts(ctx context.Context, id []byte, opts crypto.SignerOpts, digest []byte) ([]byte, error)
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
	// DefaultAlgorithm is the JWS algorithm of ID tokens when
	// oidc.signing_alg is not set, and the one a provider always offers
	// (OpenID Connect Core §15.1, Discovery §3).
	DefaultAlgorithm = store.JWSRS256
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
	// ErrUnknownAlgorithm: an algorithm that is not one of
	// store.JWSAlgorithms (never "none" or an HMAC algorithm).
	ErrUnknownAlgorithm = errors.New("oidc: not an ID-token signing algorithm (RS256, PS256 or ES256)")
)

// UnsupportedAlgorithmError means the token cannot make or use a key of
// Algorithm: it answered CKR_MECHANISM_INVALID (or refused the curve) for
// Mechanism, or hsm refused the key type as one the token lacks
// (hsm.ErrUnsupportedAlgorithm). Instead lists the algorithms that need other mechanisms.
type UnsupportedAlgorithmError struct {
	Algorithm string
	Mechanism string // the PKCS#11 mechanism the token lacks
	Token     string // the token's label, "" if the KeyStore does not tell
	Instead   []string
	Err       error
}

func (e *UnsupportedAlgorithmError) Error() string {
	tok := "the token"
	if e.Token != "" {
		tok = fmt.Sprintf("token %q", e.Token)
	}
	return fmt.Sprintf("%s needs %s, which %s lacks; choose %s (%v)",
		e.Algorithm, e.Mechanism, tok, strings.Join(e.Instead, " or "), e.Err)
}

func (e *UnsupportedAlgorithmError) Unwrap() error { return e.Err }

// unsupported turns a generation or signing error for alg into an
// *UnsupportedAlgorithmError when the token said it lacks the mechanism
// (CKR_MECHANISM_INVALID) or the curve, or hsm refused the key type
// (hsm.ErrUnsupportedAlgorithm); other errors pass unchanged.
func (r *KeyRing) unsupported(alg string, generating bool, err error) error {
	step := 1 // signing
	if generating {
		step = 0
	}
	var mech string
	switch hsm.ReturnCode(err) {
	case "CKR_MECHANISM_INVALID":
		mech = mechanisms[alg][step]
	case "CKR_CURVE_NOT_SUPPORTED", "CKR_DOMAIN_PARAMS_INVALID":
		mech = "the P-256 curve"
	default:
		// An hsm that knows the token's mechanisms refuses by name
		// before asking it; the key ring's own parameters (RSA-2048,
		// P-256, SHA-256, a 32-byte PSS salt) are ones hsm supports, so
		// the refusal is the token's.
		if !errors.Is(err, hsm.ErrUnsupportedAlgorithm) {
			return err
		}
		mech = mechanisms[alg][step]
	}
	e := &UnsupportedAlgorithmError{Algorithm: alg, Mechanism: mech, Err: err}
	if l, ok := r.HSM.(interface{ Label() string }); ok {
		e.Token = l.Label()
	}
	for _, a := range store.JWSAlgorithms() {
		if mechanisms[a][step] != mechanisms[alg][step] {
			e.Instead = append(e.Instead, a)
		}
	}
	return e
}

// mechanisms are the PKCS#11 mechanisms each algorithm needs: key-pair
// generation and signing.
var mechanisms = map[string][2]string{
	store.JWSRS256: {"CKM_RSA_PKCS_KEY_PAIR_GEN", "CKM_RSA_PKCS"},
	store.JWSPS256: {"CKM_RSA_PKCS_KEY_PAIR_GEN", "CKM_RSA_PKCS_PSS"},
	store.JWSES256: {"CKM_EC_KEY_PAIR_GEN", "CKM_ECDSA"},
}

// KeyRing manages the ID-token signing keys. The key records (state, times,
// public key) live in the store, so every process agrees on which key signs
// and which are only published; the private keys live in the HSM.
//
// Each algorithm (RS256, PS256, ES256) has its own keys and life cycle: a
// key is created "next" (published in the JWKS, not signing), Rotate
// promotes it to "active" (signing) once it has been published for
// PrePublish and retires the previously active key of its algorithm; a
// retired key stays in the JWKS until RetiredAt + IDTokenTTL + RetireLeeway
// (every ID token it signed has expired by then) and is then destroyed by
// Purge. The first key of an algorithm is active at once: no ID token of
// that algorithm exists that a relying party could verify with a cached
// JWKS. The provider holds an active key for RS256 (every provider must
// offer it), for Algorithm and for each algorithm a client registered.
type KeyRing struct {
	Store KeyRingStore
	HSM   KeyStore
	// Algorithm is oidc.signing_alg: the algorithm of the ID tokens of
	// clients that registered none; "" means DefaultAlgorithm (RS256).
	Algorithm string
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

	// active holds, per algorithm, the active key prepared for signing
	// (*signingKey), rebuilt when Sign finds another active record in the
	// store.
	active sync.Map
}

// DefaultAlg returns the algorithm of clients that registered none.
func (r *KeyRing) DefaultAlg() string {
	if r.Algorithm != "" {
		return r.Algorithm
	}
	return DefaultAlgorithm
}

// Required returns the algorithms the provider always holds an active key
// for: the default and RS256, the default first.
func (r *KeyRing) Required() []string {
	return slices.Compact([]string{r.DefaultAlg(), DefaultAlgorithm})
}

// alg resolves an algorithm argument: "" is the default; anything but
// store.JWSAlgorithms is ErrUnknownAlgorithm.
func (r *KeyRing) alg(alg string) (string, error) {
	if alg == "" {
		alg = r.DefaultAlg()
	}
	if !store.ValidJWSAlgorithm(alg) {
		return "", fmt.Errorf("%w: %.20q", ErrUnknownAlgorithm, alg)
	}
	return alg, nil
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

// KeyChange is what one write transaction of the key ring changes.
type KeyChange struct {
	// Created is a key published: next, or active at once as the first
	// key of its algorithm.
	Created *store.SigningKey
	// Activated is a next key made active (Rotate, or Ensure finding
	// only a next key of its algorithm); Retired is the active key it
	// retired, nil when none was active.
	Activated, Retired *store.SigningKey
	// Purged are the KIDs of the retired keys removed, every ID token
	// they signed expired: their HSM keys were destroyed before.
	Purged []string
	// PurgeErr is why an expired retired key could not be destroyed in
	// the HSM: it stays, and is tried again at the next purge.
	PurgeErr error
}

// Recorder appends the audit entry (or entries) of change to tx, the
// write transaction that makes it: the change and its entry are
// committed together or not at all, and an error of the Recorder undoes
// the change. The transaction may run more than once (a store that
// retries on a conflict), so a Recorder does the same each time. A nil
// Recorder records nothing.
type Recorder func(tx store.AuditAppender, change KeyChange) error

func (rec Recorder) record(tx store.AuditAppender, change KeyChange) error {
	if rec == nil {
		return nil
	}
	return rec(tx, change)
}

// Keys returns every key record, oldest first.
func (r *KeyRing) Keys(ctx context.Context) ([]store.SigningKey, error) {
	var ks []store.SigningKey
	err := r.Store.View(ctx, func(tx KeyRingTx) (err error) {
		ks, err = tx.SigningKeys()
		return err
	})
	return ks, err
}

// Ensure makes sure a key of each Required algorithm is active (see
// EnsureAlg) and reports the active key of the default algorithm. rec
// records each change in its transaction.
func (r *KeyRing) Ensure(ctx context.Context, rec Recorder) (*store.SigningKey, error) {
	var def *store.SigningKey
	for _, alg := range r.Required() {
		k, err := r.EnsureAlg(ctx, alg, rec)
		if err != nil {
			return nil, err
		}
		if def == nil {
			def = k
		}
	}
	return def, nil
}

// EnsureAlg makes sure a key of alg ("" = the default) is active: without
// any it generates the first key of alg and activates it at once; when
// only a next key exists it promotes that one. It reports the active key.
// Several daemons on one shared store may start at once: when another one
// publishes or promotes a key first, EnsureAlg destroys the key it
// generated itself and reports the key that won, instead of publishing a
// second one. A token that lacks the mechanism gives an
// *UnsupportedAlgorithmError. rec records the change, if any, in its
// transaction.
func (r *KeyRing) EnsureAlg(ctx context.Context, alg string, rec Recorder) (*store.SigningKey, error) {
	return r.EnsureAlgWithin(ctx, alg, rec, r.Store.Update)
}

// Within runs fn, the key ring's write of a new key, in a write
// transaction of the caller's that also makes the change the key is made
// for (a client that signs its ID tokens with it): both or neither are
// committed. It returns what the transaction returned; fn may run more
// than once, as a transaction's function may.
type Within func(ctx context.Context, fn func(KeyRingTx) error) error

// EnsureAlgWithin is EnsureAlg whose write of a new first key of alg runs
// within the caller's transaction: that key is published only if the
// caller's change commits with it, and is destroyed in the HSM when it
// does not (an error of the caller's transaction is returned as it is;
// one that may have committed is settled as Create's). When a key of alg
// is active already (or a next key is promoted, or another key appeared
// first), within is not called, or its last call failed and rolled back:
// the caller makes its change on its own.
func (r *KeyRing) EnsureAlgWithin(ctx context.Context, alg string, rec Recorder, within Within) (*store.SigningKey, error) {
	alg, err := r.alg(alg)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		k, err := r.ensureOnce(ctx, alg, rec, within)
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

func (r *KeyRing) ensureOnce(ctx context.Context, alg string, rec Recorder, within Within) (*store.SigningKey, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	if k := find(ks, alg, store.SigningKeyActive); k != nil {
		return k, nil
	}
	if k := find(ks, alg, store.SigningKeyNext); k != nil {
		rot, err := r.promote(ctx, alg, k.KID, true, nil, nil, rec)
		if err != nil {
			return nil, err
		}
		return &rot.Active, nil
	}
	return r.create(ctx, alg, true, rec, within)
}

// find returns the newest key of alg in state, or nil.
func find(ks []store.SigningKey, alg string, state store.SigningKeyState) *store.SigningKey {
	for i := len(ks) - 1; i >= 0; i-- {
		if ks[i].State == state && ks[i].Algorithm == alg {
			return &ks[i]
		}
	}
	return nil
}

// Algorithms returns what discovery offers: the Required algorithms (the
// daemon makes their keys at start) and those another key is active for (a
// client registered them), the default first, then in the order of
// store.JWSAlgorithms.
func (r *KeyRing) Algorithms(ctx context.Context) ([]string, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := r.Required()
	for _, alg := range store.JWSAlgorithms() {
		if find(ks, alg, store.SigningKeyActive) != nil && !slices.Contains(out, alg) {
			out = append(out, alg)
		}
	}
	return out, nil
}

// Create generates a key pair for alg ("" = the default) in the HSM and
// publishes it as the next key of alg; when no key of alg is active yet,
// the new key is active at once. A second next key of one algorithm is
// refused (ErrNextKeyExists): rotate first. rec records the key in the
// transaction that stores it. If the store write (or rec) fails the HSM
// key is destroyed again; when the write's outcome is unknown
// (store.ErrOutcomeUnknown) only once a fenced read of the key ring shows
// it did not apply (see settle).
func (r *KeyRing) Create(ctx context.Context, alg string, rec Recorder) (*store.SigningKey, error) {
	alg, err := r.alg(alg)
	if err != nil {
		return nil, err
	}
	return r.create(ctx, alg, false, rec, r.Store.Update)
}

// generate makes a key pair for alg in the HSM: RSA 2048 for RS256 and
// PS256, EC P-256 for ES256.
func (r *KeyRing) generate(ctx context.Context, alg, label string) (*hsm.KeyInfo, error) {
	var info *hsm.KeyInfo
	var err error
	if alg == store.JWSES256 {
		info, err = r.HSM.GenerateEC(ctx, label, elliptic.P256())
	} else {
		info, err = r.HSM.GenerateRSA(ctx, label, KeyBits)
	}
	if err != nil {
		return nil, fmt.Errorf("oidc: generate %s signing key: %w", alg, r.unsupported(alg, true, err))
	}
	return info, nil
}

// create is Create; first (EnsureAlg) publishes the key only while the
// store holds no active and no next key of alg, and otherwise gives
// errKeyAppeared. The key is written in a transaction update runs.
func (r *KeyRing) create(ctx context.Context, alg string, first bool, rec Recorder, update Within) (*store.SigningKey, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	if k := find(ks, alg, store.SigningKeyNext); k != nil {
		return nil, fmt.Errorf("%w: %s %s (published %s)", ErrNextKeyExists, alg, k.KID, k.CreatedAt.Format(time.RFC3339))
	}
	id, err := store.NewID()
	if err != nil {
		return nil, err
	}
	info, err := r.generate(ctx, alg, "signd-oidc-"+id)
	if err != nil {
		return nil, err
	}
	k, err := newSigningKey(info, alg, r.now())
	if err == nil {
		err = update(ctx, func(tx KeyRingTx) error {
			k.State, k.ActivatedAt = store.SigningKeyNext, time.Time{} // the transaction may run again
			cur, err := tx.SigningKeys()
			if err != nil {
				return err
			}
			if first && (find(cur, alg, store.SigningKeyActive) != nil || find(cur, alg, store.SigningKeyNext) != nil) {
				return errKeyAppeared
			}
			if n := find(cur, alg, store.SigningKeyNext); n != nil {
				return fmt.Errorf("%w: %s %s", ErrNextKeyExists, alg, n.KID)
			}
			if find(cur, alg, store.SigningKeyActive) == nil {
				k.State, k.ActivatedAt = store.SigningKeyActive, k.CreatedAt
			}
			if err := tx.CreateSigningKey(k); err != nil {
				return err
			}
			return rec.record(tx, KeyChange{Created: k})
		})
	}
	if err != nil {
		if k == nil {
			r.destroyUnused(ctx, info)
			return nil, err
		}
		stored, err := r.settle(ctx, info, k.KID, err)
		if stored == nil {
			return nil, err
		}
		k = stored
	}
	r.log().Info("oidc: signing key created", "kid", k.KID, "alg", alg, "state", k.State, "label", k.Label)
	return k, nil
}

// settle decides the fate of the HSM key info of the key kid, whose store
// write failed with err (store.Settle): nothing was stored, and the HSM key
// is destroyed again — unless the write may have committed all the same
// (store.ErrOutcomeUnknown) and a fenced read of the key ring finds a
// record of kid: the write (and its audit entry) committed, and settle
// returns that record and no error. When that read fails too, the HSM key
// is kept (a published key whose private key is gone could sign nothing,
// and the daemon's start-up probe would refuse it) and logged as an
// orphan for the operator to destroy if no key record names it.
func (r *KeyRing) settle(ctx context.Context, info *hsm.KeyInfo, kid string, err error) (*store.SigningKey, error) {
	var stored *store.SigningKey
	fate, rerr := store.Settle(ctx, r.Store, err, func(tx KeyRingTx) error {
		ks, err := tx.SigningKeys()
		if err != nil {
			return err
		}
		for i := range ks {
			if ks[i].KID == kid {
				stored = &ks[i]
				return nil
			}
		}
		return store.ErrNotFound
	})
	switch fate {
	case store.Committed:
		r.log().Warn("oidc: the signing key's commit reported an error but applied", "kid", kid, "label", info.Label, "err", err)
		return stored, nil
	case store.FateUnknown:
		r.log().Error("oidc: the signing key's commit has an unknown outcome and the key ring cannot be read: "+
			"its HSM key is kept; destroy it if no key record names its KID",
			"kid", kid, "label", info.Label, "key_id", fmt.Sprintf("%x", info.ID), "err", err, "read_err", rerr)
		return nil, err
	}
	r.destroyUnused(ctx, info)
	return nil, err
}

// destroyUnused destroys the HSM key of a key the store did not take.
func (r *KeyRing) destroyUnused(ctx context.Context, info *hsm.KeyInfo) {
	if derr := r.HSM.DestroyKey(context.WithoutCancel(ctx), info.ID); derr != nil {
		r.log().Error("oidc: destroying the unused signing key failed", "key_id", fmt.Sprintf("%x", info.ID), "label", info.Label, "err", derr)
	}
}

func newSigningKey(info *hsm.KeyInfo, alg string, now time.Time) (*store.SigningKey, error) {
	kid, err := Thumbprint(info.Public)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(info.Public)
	if err != nil {
		return nil, err
	}
	return &store.SigningKey{
		KID: kid, KeyID: info.ID, Label: info.Label, Algorithm: alg,
		PublicKey: der, State: store.SigningKeyNext, CreatedAt: now,
	}, nil
}

// Rotation is the outcome of Rotate.
type Rotation struct {
	Active  store.SigningKey  // the key that signs from now on
	Retired *store.SigningKey // the key that stopped signing; nil if none was active
	Purged  []string          // KIDs of retired keys removed because their tokens expired
}

// Rotate promotes the next key of alg ("" = the default) to active and
// retires the active key of alg; keys of other algorithms are left as
// they are. The next key must have been published for PrePublish
// (ErrNextKeyTooNew) unless force is set; without a next key it fails with
// ErrNoNextKey. It purges the retired keys whose tokens have all expired
// with it: their HSM keys are destroyed first, their records leave the
// store in the promotion's transaction, where rec records the rotation.
// A key the HSM did not destroy stays (a rotation with an error: the
// rotation is done, the purge is tried again next time). When the
// transaction fails, the keys destroyed before it are no longer published
// and their records stay until the next purge: the error names them
// (destroyedBefore).
func (r *KeyRing) Rotate(ctx context.Context, alg string, force bool, rec Recorder) (*Rotation, error) {
	alg, err := r.alg(alg)
	if err != nil {
		return nil, err
	}
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	next := find(ks, alg, store.SigningKeyNext)
	if next == nil {
		return nil, fmt.Errorf("%w (%s)", ErrNoNextKey, alg)
	}
	if ready := next.CreatedAt.Add(r.prePublish()); !force && r.now().Before(ready) {
		return nil, fmt.Errorf("%w: %s signs from %s on", ErrNextKeyTooNew, next.KID, ready.Format(time.RFC3339))
	}
	gone, purgeErr := r.destroyExpired(ctx, ks)
	rot, err := r.promote(ctx, alg, next.KID, force, gone, purgeErr, rec)
	if err != nil {
		return nil, destroyedBefore(err, gone)
	}
	return rot, purgeErr
}

// destroyedBefore adds to err, the failure of the transaction that was to
// remove the records of the keys gone (and record it), that their HSM
// keys were destroyed before it: the one change made without its audit
// entry. It is safe: those keys are retired and no longer published (every
// ID token they signed has expired), nothing signs with them, and the
// next purge removes their records (a key the HSM no longer holds counts
// as destroyed) in a transaction that records it.
func destroyedBefore(err error, gone []string) error {
	if len(gone) == 0 {
		return err
	}
	return fmt.Errorf("%w (the HSM keys of the expired retired keys %s were destroyed before; the next purge removes their records)",
		err, strings.Join(gone, " "))
}

// promote makes the next key kid of alg active and retires the active key
// of alg, and removes the records of the keys purge names (destroyed in
// the HSM: purgeErr says why another was not), in one transaction.
func (r *KeyRing) promote(ctx context.Context, alg, kid string, force bool, purge []string, purgeErr error, rec Recorder) (*Rotation, error) {
	now := r.now()
	var rot *Rotation
	err := r.Store.Update(ctx, func(tx KeyRingTx) error {
		rot = &Rotation{}
		ks, err := tx.SigningKeys()
		if err != nil {
			return err
		}
		next := find(ks, alg, store.SigningKeyNext)
		if next == nil || next.KID != kid {
			return ErrNoNextKey // another rotation won the race
		}
		if !force && now.Before(next.CreatedAt.Add(r.prePublish())) && find(ks, alg, store.SigningKeyActive) != nil {
			return fmt.Errorf("%w: %s", ErrNextKeyTooNew, kid)
		}
		for i := range ks {
			if ks[i].State == store.SigningKeyActive && ks[i].Algorithm == alg {
				ks[i].State, ks[i].RetiredAt = store.SigningKeyRetired, now
				if err := tx.PutSigningKey(&ks[i]); err != nil {
					return err
				}
				rot.Retired = &ks[i]
			}
		}
		next.State, next.ActivatedAt = store.SigningKeyActive, now
		if err := tx.PutSigningKey(next); err != nil {
			return err
		}
		rot.Active = *next
		if rot.Purged, err = deleteKeys(tx, purge); err != nil {
			return err
		}
		return rec.record(tx, KeyChange{Activated: &rot.Active, Retired: rot.Retired, Purged: rot.Purged, PurgeErr: purgeErr})
	})
	if err != nil {
		return nil, err
	}
	r.log().Info("oidc: signing key activated", "kid", rot.Active.KID, "alg", alg)
	r.logPurged(rot.Purged)
	return rot, nil
}

// Purge destroys the retired keys whose ID tokens have all expired (see
// PublishedUntil) and removes their records, in one transaction where rec
// records it. A key already gone from the HSM is removed from the store
// all the same; one the HSM did not destroy stays, and Purge reports why
// with the keys it did purge. When the transaction fails, the error names
// the keys destroyed before it (destroyedBefore).
func (r *KeyRing) Purge(ctx context.Context, rec Recorder) ([]string, error) {
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	gone, purgeErr := r.destroyExpired(ctx, ks)
	if len(gone) == 0 {
		return nil, purgeErr
	}
	var purged []string
	err = r.Store.Update(ctx, func(tx KeyRingTx) (err error) {
		if purged, err = deleteKeys(tx, gone); err != nil || len(purged) == 0 {
			return err
		}
		return rec.record(tx, KeyChange{Purged: purged, PurgeErr: purgeErr})
	})
	if err != nil {
		return nil, destroyedBefore(err, gone)
	}
	r.logPurged(purged)
	return purged, purgeErr
}

// destroyExpired destroys in the HSM the keys of ks that are retired and
// no longer published, and returns their KIDs; it stops at the first
// key the HSM does not destroy (one it does not hold counts as
// destroyed).
func (r *KeyRing) destroyExpired(ctx context.Context, ks []store.SigningKey) ([]string, error) {
	now := r.now()
	var gone []string
	for i := range ks {
		k := &ks[i]
		if k.State != store.SigningKeyRetired || r.published(k, now) {
			continue
		}
		if err := r.HSM.DestroyKey(ctx, k.KeyID); err != nil && !errors.Is(err, hsm.ErrKeyNotFound) {
			return gone, fmt.Errorf("oidc: destroy retired signing key %s: %w", k.KID, err)
		}
		gone = append(gone, k.KID)
	}
	return gone, nil
}

// deleteKeys removes the records of kids in tx and returns those it
// removed (another daemon may have purged some first).
func deleteKeys(tx KeyRingTx, kids []string) ([]string, error) {
	var out []string
	for _, kid := range kids {
		switch err := tx.DeleteSigningKey(kid); {
		case err == nil:
			out = append(out, kid)
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

func (r *KeyRing) logPurged(kids []string) {
	for _, kid := range kids {
		r.log().Info("oidc: retired signing key purged", "kid", kid)
	}
}

// JWKS returns the published public keys: next, active and retired keys
// whose tokens may still be valid, of every algorithm, each with kid, use
// "sig" and its alg (an RSA key for RS256 and PS256, an EC P-256 key for
// ES256).
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
	ok := false
	switch p := pub.(type) {
	case *rsa.PublicKey:
		ok = k.Algorithm == store.JWSRS256 || k.Algorithm == store.JWSPS256
	case *ecdsa.PublicKey:
		ok = k.Algorithm == store.JWSES256 && p.Curve == elliptic.P256()
	}
	if !ok {
		return nil, fmt.Errorf("oidc: signing key %s: a %T is not a %s key", k.KID, pub, k.Algorithm)
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
// key of alg ("" = the default): header alg, typ JWT, kid. The signature
// is made in the HSM; ctx bounds the wait for an HSM session. The key
// records are read on every call (the store decides which key signs); the
// parsed public key and the header are built once per active record.
func (r *KeyRing) Sign(ctx context.Context, alg string, claims any) (string, error) {
	alg, err := r.alg(alg)
	if err != nil {
		return "", err
	}
	ks, err := r.Keys(ctx)
	if err != nil {
		return "", err
	}
	active := find(ks, alg, store.SigningKeyActive)
	if active == nil {
		return "", fmt.Errorf("%w (%s)", ErrNoSigningKey, alg)
	}
	sk, _ := r.active.Load(alg)
	cur, _ := sk.(*signingKey)
	if cur == nil || !cur.matches(active) {
		if cur, err = newSigningKeyFor(active); err != nil {
			return "", err
		}
		r.active.Store(alg, cur)
	}
	jws, err := cur.sign(ctx, r.HSM, claims)
	if err != nil {
		return "", r.unsupported(alg, false, err)
	}
	return jws, nil
}

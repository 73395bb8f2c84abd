package hsm

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
)

// KeyInfo describes a key pair on the token: RSA or EC.
type KeyInfo struct {
	ID     []byte           // CKA_ID, 16 random bytes for keys made by GenerateRSA or GenerateEC
	Label  string           // CKA_LABEL, for humans; keys are found by ID
	Bits   int              // RSA modulus size or EC curve size
	Public crypto.PublicKey // *rsa.PublicKey or *ecdsa.PublicKey
	// Defects says how the token fails to freeze the key, one phrase
	// each ("CKA_LABEL can be changed", "can decrypt"); empty when it
	// keeps the promise. Filled by GenerateRSA, GenerateEC and CheckKeys.
	Defects []string
}

// cachedKey is a loaded, policy-checked private key.
type cachedKey struct {
	handle pkcs11.ObjectHandle
	pub    crypto.PublicKey // *rsa.PublicKey or *ecdsa.PublicKey
	label  string
	gen    uint64 // generation the handle belongs to
}

func (t *Token) flushCache() {
	t.cacheMu.Lock()
	clear(t.cache)
	t.cacheMu.Unlock()
}

func (t *Token) forget(id []byte) {
	t.cacheMu.Lock()
	delete(t.cache, string(id))
	t.cacheMu.Unlock()
}

// keyFor returns the private key with CKA_ID id, from the cache or else
// found on s and checked against the policy. Called inside run.
func (t *Token) keyFor(s pkcs11.SessionHandle, id []byte) (cachedKey, error) {
	gen := t.gen.Load()
	t.cacheMu.Lock()
	ck, ok := t.cache[string(id)]
	t.cacheMu.Unlock()
	if ok && ck.gen == gen {
		return ck, nil
	}
	h, err := t.findKey(s, pkcs11.CKO_PRIVATE_KEY, id)
	if err != nil {
		return cachedKey{}, err
	}
	a, err := t.obj.ReadKeyAttrs(s, h)
	if err != nil {
		return cachedKey{}, err
	}
	if err := keyobj.CheckPolicy(a, t.minRSABits, t.allowImported); err != nil {
		return cachedKey{}, fmt.Errorf("key %x: %w", id, err)
	}
	ck = cachedKey{handle: h, pub: a.Pub, label: a.Label, gen: gen}
	t.cacheMu.Lock()
	if _, ok := t.cache[string(id)]; !ok && len(t.cache) >= t.cacheMax {
		t.evictLocked(gen)
	}
	t.cache[string(id)] = ck
	t.cacheMu.Unlock()
	return ck, nil
}

// DefaultKeyCacheSize is the number of private-key handles a Token keeps
// when Config.KeyCacheSize is not set: a few hundred KiB of memory.
const DefaultKeyCacheSize = 4096

// evictLocked makes room for one entry in the full key cache: it drops
// every handle of an earlier generation (useless after a reconnect) and,
// when that frees nothing, one entry chosen at random (Go's map iteration
// order), which costs the evicted key one C_FindObjects on its next use.
// The caller holds cacheMu.
func (t *Token) evictLocked(gen uint64) {
	for id, ck := range t.cache {
		if ck.gen != gen {
			delete(t.cache, id)
		}
	}
	for id := range t.cache {
		if len(t.cache) < t.cacheMax {
			return
		}
		delete(t.cache, id)
	}
}

// findKey returns the one key of class with CKA_ID id.
func (t *Token) findKey(s pkcs11.SessionHandle, class uint, id []byte) (pkcs11.ObjectHandle, error) {
	if len(id) == 0 {
		return 0, fmt.Errorf("%w: empty key ID", ErrKeyNotFound)
	}
	hs, err := t.obj.Find(s, keyobj.KeyTemplate(class, id), 2)
	switch {
	case err != nil:
		return 0, err
	case len(hs) == 0:
		if err := t.checkNotFound(s); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: no key with ID %x on token %q", ErrKeyNotFound, id, t.label)
	case len(hs) > 1:
		return 0, fmt.Errorf("%w: ID %x on token %q", ErrAmbiguousKey, id, t.label)
	}
	return hs[0], nil
}

// checkNotFound decides whether a find on s that returned nothing can be
// believed. It cannot when s is not logged in (private objects are
// invisible: CKR_USER_NOT_LOGGED_IN, so run logs in again) or when the
// token does not answer C_GetTokenInfo (errTokenGone, device class, so the
// token is marked unavailable): SoftHSM2 answers every find on a token
// whose object directory vanished with zero objects and no error, and only
// C_GetTokenInfo tells (CKR_GENERAL_ERROR). Only misses pay for the check
// (about 0.1 ms on SoftHSM2).
func (t *Token) checkNotFound(s pkcs11.SessionHandle) error {
	if err := t.checkLoggedIn(s); err != nil {
		return err
	}
	if _, err := t.lib.GetTokenInfo(t.slot); err != nil {
		return fmt.Errorf("%w: %w", ckr.ErrTokenGone, ckr.Wrap("C_GetTokenInfo", err))
	}
	return nil
}

// checkLoggedIn fails with CKR_USER_NOT_LOGGED_IN (so that run logs in
// again) when s is not in a user state. A find on a session that is not
// logged in silently omits private objects: "no key" is only believable
// from a logged-in session.
func (t *Token) checkLoggedIn(s pkcs11.SessionHandle) error {
	info, err := t.lib.GetSessionInfo(s)
	if err != nil {
		return ckr.Wrap("C_GetSessionInfo", err)
	}
	if info.State != pkcs11.CKS_RW_USER_FUNCTIONS && info.State != pkcs11.CKS_RO_USER_FUNCTIONS {
		return ckr.Wrap("C_GetSessionInfo", pkcs11.Error(pkcs11.CKR_USER_NOT_LOGGED_IN))
	}
	return nil
}

// GenerateRSA generates an RSA key pair of bits (2048, 3072 or 4096) inside
// the token, labelled label, with a random 16-byte CKA_ID. The private key
// is sensitive, never extractable, can only sign and can be neither
// modified nor copied; the public key can only verify and cannot be
// modified. A label already on the token is refused (ErrLabelExists).
// The public key is read back and checked.
func (t *Token) GenerateRSA(ctx context.Context, label string, bits int) (*KeyInfo, error) {
	switch bits {
	case 2048, 3072, 4096:
	default:
		return nil, fmt.Errorf("%w: RSA-%d (2048, 3072 or 4096 bits)", ErrUnsupportedAlgorithm, bits)
	}
	if bits < t.minRSABits {
		return nil, fmt.Errorf("%w: RSA-%d, at least %d bits required", ErrWeakKey, bits, t.minRSABits)
	}
	if err := t.caps.CheckRSA(bits); err != nil {
		return nil, fmt.Errorf("hsm: generate RSA key: %w", err)
	}
	mech := pkcs11.NewMechanism(pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN, nil)
	what := fmt.Sprintf("an RSA-%d key (%d bits)", bits, bits)
	return t.generate(ctx, "RSA", what, label, mech, keyobj.RSAPublicTemplate(bits), pkcs11.CKK_RSA, func(pub crypto.PublicKey) error {
		p, ok := pub.(*rsa.PublicKey)
		if !ok || p.N.BitLen() != bits || p.E != 65537 {
			return fmt.Errorf("hsm: token generated RSA-%d with exponent %d, asked for RSA-%d with 65537", KeyBits(pub), keyobj.RSAExponent(pub), bits)
		}
		return nil
	})
}

// generate generates a key pair of keyType with mech, the public key
// template pubT (CKA_ID and CKA_LABEL are added) and the private key
// template of the Token's profile; want checks the public key read back.
// kind names the key type in logs and errors, what the key asked for
// ("RSA-2048 (2048 bits)", "P-256") in refusals.
//
// The templates follow the token (see templateOptions): CKA_COPYABLE only
// for Cryptoki 2.40 and later, and dropped for good when the token
// refuses it (CKR_ATTRIBUTE_TYPE_INVALID); under ProfileAuto a refused
// strict template is retried once with the token-fixed-usage one. A
// refusal the token still answers for is ErrUnsupportedAlgorithm, naming
// what was asked.
func (t *Token) generate(ctx context.Context, kind, what, label string, mech *pkcs11.Mechanism, pubT []*pkcs11.Attribute, keyType uint, want func(crypto.PublicKey) error) (*KeyInfo, error) {
	if err := keyobj.CheckLabel(label); err != nil {
		return nil, err
	}
	id, err := keyobj.NewID()
	if err != nil {
		return nil, err
	}
	pubT = append(slices.Clip(pubT),
		pkcs11.NewAttribute(pkcs11.CKA_ID, id),
		pkcs11.NewAttribute(pkcs11.CKA_LABEL, label))

	t.genMu.Lock()
	defer t.genMu.Unlock()
	var info *KeyInfo
	err = t.run(ctx, "generate "+kind+" key", func(s pkcs11.SessionHandle) error {
		hs, err := t.obj.Find(s, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)}, 1)
		if err != nil {
			return err
		}
		if len(hs) > 0 {
			return fmt.Errorf("%w: %q on token %q", ErrLabelExists, label, t.label)
		}
		if err := t.checkLoggedIn(s); err != nil {
			return err // private objects were invisible to the label check
		}
		hs, err = t.obj.Find(s, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_ID, id)}, 1)
		if err != nil {
			return err
		}
		if len(hs) > 0 {
			return fmt.Errorf("hsm: random key ID %x already in use", id)
		}
		pubH, privH, err := t.generatePair(s, what, mech, pubT, id, label, keyType)
		if err != nil {
			return err
		}
		pub, defects, err := t.checkGenerated(s, privH, label, want)
		if errors.Is(err, keyobj.ErrUnusablePublic) {
			err = ckr.Refused(fmt.Errorf("%w: %s made %s whose public key is unusable: %w", ErrUnsupportedAlgorithm, t.caps.Token(), what, err))
		}
		if err == nil && len(defects) > 0 && t.requireFrozen {
			err = fmt.Errorf("%w: %s: %s (pkcs11.require_immutable_keys)", ErrKeyNotFrozen, t.caps.Token(), strings.Join(defects, ", "))
		}
		if err != nil {
			// Best effort on this session; it may be the reason.
			if derr := errors.Join(ckr.Wrap("C_DestroyObject", t.lib.DestroyObject(s, privH)), ckr.Wrap("C_DestroyObject", t.lib.DestroyObject(s, pubH))); derr != nil {
				return fmt.Errorf("generated key %x (not destroyed: %s): %w", id, strings.ReplaceAll(derr.Error(), "\n", "; "), err)
			}
			return fmt.Errorf("generated key %x (destroyed): %w", id, err)
		}
		info = &KeyInfo{ID: id, Label: label, Bits: KeyBits(pub), Public: pub, Defects: defects}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t.log.InfoContext(ctx, "hsm: generated key pair", "type", kind, "token", t.label, "label", label, "id", fmt.Sprintf("%x", id), "bits", info.Bits)
	if len(info.Defects) > 0 {
		t.warnDefects(info)
	}
	return info, nil
}

// warnDefects logs that the token does not freeze key k.
func (t *Token) warnDefects(k *KeyInfo) {
	t.log.Warn("hsm: the token does not freeze this key: anyone with the user PIN can use or change it beyond signing",
		"token", t.label, "manufacturer", t.caps.Manufacturer, "model", t.caps.Model,
		"label", k.Label, "id", fmt.Sprintf("%x", k.ID), "defects", strings.Join(k.Defects, ", "))
}

// generatePair calls C_GenerateKeyPair with the templates of the Token's
// profile, adapting them once per kind of refusal (see generate).
func (t *Token) generatePair(s pkcs11.SessionHandle, what string, mech *pkcs11.Mechanism, pubT []*pkcs11.Attribute, id []byte, label string, keyType uint) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	for {
		o := t.templateOptions()
		pubH, privH, err := t.lib.GenerateKeyPair(s, []*pkcs11.Mechanism{mech}, o.Apply(pubT), o.Apply(keyobj.PrivateTemplate(id, label, keyType)))
		if err == nil {
			return pubH, privH, nil
		}
		err = ckr.Wrap("C_GenerateKeyPair", err)
		switch {
		case o.Copyable && ckr.RV(err) == pkcs11.CKR_ATTRIBUTE_TYPE_INVALID:
			t.noCopyable.Store(true)
			t.log.Info("hsm: the token does not know CKA_COPYABLE; key templates leave it out", "token", t.label, "cryptoki", t.caps.CryptokiVersion)
			continue
		case !o.FixedUsage && t.profile == ProfileAuto && keyobj.TemplateRefusal(ckr.RV(err)):
			if gone := t.answers(); gone != nil {
				return 0, 0, fmt.Errorf("%w: %w (then %w)", ckr.ErrTokenGone, err, gone)
			}
			t.fixedUsage.Store(true)
			t.log.Warn("hsm: the token refused a key template that switches decrypt and encrypt off; it sets usages itself (pkcs11.profile token-fixed-usage)",
				"token", t.label, "manufacturer", t.caps.Manufacturer, "model", t.caps.Model, "error", err)
			continue
		}
		return 0, 0, t.refused(what, err)
	}
}

// refused turns a refusal (keyobj.Refusal, or an ambiguous code while the
// token still answers C_GetTokenInfo) into ErrUnsupportedAlgorithm naming
// what was asked; other errors pass through. Called inside run.
func (t *Token) refused(what string, err error) error {
	code := ckr.RV(err)
	if !keyobj.Refusal(code) {
		if ckr.ClassOf(code) != ckr.Confirm {
			return err
		}
		if gone := t.answers(); gone != nil {
			return fmt.Errorf("%w: %w (then C_GetTokenInfo: %w)", ckr.ErrTokenGone, err, gone)
		}
	}
	return ckr.Refused(fmt.Errorf("%w: %s refused %s: %w", ErrUnsupportedAlgorithm, t.caps.Token(), what, err))
}

// answers asks the token for its info: nil when it answers. Called
// inside run (or under t.mu and t.mod.mu.RLock).
func (t *Token) answers() error {
	_, err := t.lib.GetTokenInfo(t.slot)
	return ckr.Wrap("C_GetTokenInfo", err)
}

func (t *Token) templateOptions() keyobj.Options {
	return keyobj.Options{Copyable: !t.noCopyable.Load(), FixedUsage: t.fixedUsage.Load()}
}

// adaptTemplates sets the template options the capabilities call for:
// no CKA_COPYABLE before Cryptoki 2.40 (it is a 2.40 attribute;
// opencryptoki 3.8 reports 2.20 and refuses it), and the usage profile.
func (t *Token) adaptTemplates() {
	if !t.caps.AtLeast(2, 40) {
		t.noCopyable.Store(true)
	}
	if t.profile == ProfileTokenFixedUsage {
		t.fixedUsage.Store(true)
	}
	t.caps.Profile = t.profile
}

// checkGenerated reads the new key pair back (the private key's public
// half, from the private object for RSA, from the public object for EC),
// checks it with want, checks that the private key got the template, and
// returns what the token does not keep of the freeze (keyobj.Objects.FreezeDefects).
func (t *Token) checkGenerated(s pkcs11.SessionHandle, privH pkcs11.ObjectHandle, label string, want func(crypto.PublicKey) error) (crypto.PublicKey, []string, error) {
	a, err := t.obj.ReadKeyAttrs(s, privH)
	if err != nil {
		return nil, nil, err
	}
	if err := want(a.Pub); err != nil {
		return nil, nil, err
	}
	if err := keyobj.CheckPolicy(a, KeyBits(a.Pub), false); err != nil {
		return nil, nil, err
	}
	// A token that says it ignored the freeze would leave a key anyone
	// with the user PIN can relabel or clone: refused. A token that says
	// it kept it but does not is found out by the freeze test.
	v, err := t.obj.Attrs(s, privH, pkcs11.CKA_MODIFIABLE, pkcs11.CKA_COPYABLE)
	if err != nil {
		return nil, nil, err
	}
	if keyobj.AttrBool(v[pkcs11.CKA_MODIFIABLE]) || keyobj.AttrBool(v[pkcs11.CKA_COPYABLE]) {
		return nil, nil, fmt.Errorf("%w: the token left the new private key modifiable or copyable", ErrKeyPolicy)
	}
	defects, err := t.obj.FreezeDefects(s, privH, label)
	return a.Pub, defects, err
}

// Keys lists the RSA and EC private keys on the token, by label then ID. It does
// not apply the key policy; Key does.
func (t *Token) Keys(ctx context.Context) ([]KeyInfo, error) {
	return t.keys(ctx, false)
}

// CheckKeys is Keys with each key's freeze tested as at generation
// (KeyInfo.Defects: a same-value C_SetAttributeValue of CKA_LABEL, the
// usages beyond signing) and a warning logged for every key the token
// does not freeze. signd calls it at start. It stops between keys when
// ctx ends.
func (t *Token) CheckKeys(ctx context.Context) ([]KeyInfo, error) {
	keys, err := t.keys(ctx, true)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		if len(keys[i].Defects) > 0 {
			t.warnDefects(&keys[i])
		}
	}
	return keys, nil
}

func (t *Token) keys(ctx context.Context, defects bool) ([]KeyInfo, error) {
	var out []KeyInfo
	err := t.run(ctx, "list keys", func(s pkcs11.SessionHandle) error {
		out = out[:0]
		hs, err := t.obj.FindAll(s, []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PRIVATE_KEY),
			pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true), // not another freeze test's copy
		})
		if err != nil {
			return err
		}
		if len(hs) == 0 {
			if err := t.checkNotFound(s); err != nil {
				return err // private keys were invisible, or the token is gone
			}
		}
		for _, h := range hs {
			if err := ctx.Err(); err != nil {
				return err // a long list is given up when the caller goes
			}
			v, err := t.obj.Attrs(s, h, pkcs11.CKA_ID, pkcs11.CKA_LABEL, pkcs11.CKA_KEY_TYPE)
			if err != nil {
				return err
			}
			if kt := keyobj.AttrUint(v[pkcs11.CKA_KEY_TYPE]); kt != pkcs11.CKK_RSA && kt != pkcs11.CKK_EC && kt != keyobj.CKKECEdwards {
				continue // not a signing key this package makes
			}
			pub, err := t.obj.ReadPublic(s, h, v[pkcs11.CKA_KEY_TYPE], v[pkcs11.CKA_ID])
			if err != nil {
				return fmt.Errorf("key %x: %w", v[pkcs11.CKA_ID], err)
			}
			k := KeyInfo{ID: v[pkcs11.CKA_ID], Label: string(v[pkcs11.CKA_LABEL]), Bits: KeyBits(pub), Public: pub}
			if defects {
				if k.Defects, err = t.obj.FreezeDefects(s, h, k.Label); err != nil {
					return fmt.Errorf("key %x: %w", k.ID, err)
				}
			}
			out = append(out, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, compareKeyInfo)
	return out, nil
}

// compareKeyInfo orders keys by label, then ID.
func compareKeyInfo(a, b KeyInfo) int {
	if c := strings.Compare(a.Label, b.Label); c != 0 {
		return c
	}
	return bytes.Compare(a.ID, b.ID)
}

// DestroyKey destroys the key pair with CKA_ID id and any certificate
// stored with that ID: it undoes an enrollment. It fails with
// ErrKeyNotFound when neither key exists and ErrAmbiguousKey when the ID is
// not unique.
func (t *Token) DestroyKey(ctx context.Context, id []byte) error {
	if len(id) == 0 {
		return fmt.Errorf("hsm: destroy key: %w: empty key ID", ErrKeyNotFound)
	}
	t.genMu.Lock()
	defer t.genMu.Unlock()
	err := t.run(ctx, "destroy key", func(s pkcs11.SessionHandle) error {
		priv, err := t.obj.Find(s, keyobj.KeyTemplate(pkcs11.CKO_PRIVATE_KEY, id), 2)
		if err != nil {
			return err
		}
		pub, err := t.obj.Find(s, keyobj.KeyTemplate(pkcs11.CKO_PUBLIC_KEY, id), 2)
		if err != nil {
			return err
		}
		if len(priv) == 0 {
			if err := t.checkNotFound(s); err != nil {
				return err
			}
		}
		switch {
		case len(priv) == 0 && len(pub) == 0:
			return fmt.Errorf("%w: no key with ID %x on token %q", ErrKeyNotFound, id, t.label)
		case len(priv) > 1 || len(pub) > 1:
			return fmt.Errorf("%w: ID %x on token %q", ErrAmbiguousKey, id, t.label)
		}
		certs, err := t.obj.FindAll(s, keyobj.CertTemplate(id))
		if err != nil {
			return err
		}
		for _, h := range slices.Concat(certs, priv, pub) {
			if err := t.lib.DestroyObject(s, h); err != nil {
				return ckr.Wrap("C_DestroyObject", err)
			}
		}
		return nil
	})
	t.forget(id)
	if err != nil {
		return err
	}
	t.log.InfoContext(ctx, "hsm: destroyed key pair", "token", t.label, "id", fmt.Sprintf("%x", id))
	return nil
}

// CheckKey reports whether a signature with the key whose CKA_ID is id
// could be made now, without making one: the token is available, a pool
// session becomes free within Config.AcquireTimeout or before ctx ends
// (else ErrBusy), and the key is known, from the handle cache or found on
// the token and checked against the key policy (else ErrKeyNotFound,
// ErrAmbiguousKey or ErrKeyPolicy). It is the check a caller makes before
// spending something on a signature (a SAD): fast, with a cached handle no
// PKCS#11 call at all. A device error marks the token unavailable, as
// every call does.
func (t *Token) CheckKey(ctx context.Context, id []byte) error {
	return t.run(ctx, "check key", func(s pkcs11.SessionHandle) error {
		_, err := t.keyFor(s, id)
		return err
	})
}

// loadKey is the key pair with CKA_ID id after the key policy of Key, from
// the cache or the token.
func (t *Token) loadKey(ctx context.Context, id []byte) (cachedKey, error) {
	var ck cachedKey
	err := t.run(ctx, "load key", func(s pkcs11.SessionHandle) error {
		var err error
		ck, err = t.keyFor(s, id)
		return err
	})
	return ck, err
}

// Key returns the signer for the RSA or EC key pair with CKA_ID id. The private
// key must satisfy the key policy: CKA_SIGN, CKA_SENSITIVE, not
// CKA_EXTRACTABLE, generated in the token (CKA_LOCAL, CKA_ALWAYS_SENSITIVE,
// CKA_NEVER_EXTRACTABLE; waived by Config.AllowImportedKeys), and at least
// Config.MinRSABits. Its handle is cached.
func (t *Token) Key(ctx context.Context, id []byte) (*Key, error) {
	ck, err := t.loadKey(ctx, id)
	if err != nil {
		return nil, err
	}
	return NewKey(t, id, ck.label, ck.pub), nil
}

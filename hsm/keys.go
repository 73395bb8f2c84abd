package hsm

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
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

// idLen is the length of the CKA_ID GenerateRSA chooses.
const idLen = 16

// maxLabelLen bounds labels; CKA_LABEL has no limit, but humans read them.
const maxLabelLen = 128

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
	a, err := t.readKeyAttrs(s, h)
	if err != nil {
		return cachedKey{}, err
	}
	if err := checkPolicy(a, t.minRSABits, t.allowImported); err != nil {
		return cachedKey{}, fmt.Errorf("key %x: %w", id, err)
	}
	ck = cachedKey{handle: h, pub: a.pub, label: a.label, gen: gen}
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

// keyTemplate matches the key of class with CKA_ID id, RSA or EC (the
// type is read and checked once found). The class matters: a certificate
// imported for the key shares its ID. Only token objects match: signd's
// keys live on the token, and a session object (visible to every session
// of the application) is never one of them, such as a copy the freeze
// test made (freezeDefects) while another session looks the key up.
func keyTemplate(class uint, id []byte) []*pkcs11.Attribute {
	return []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, class),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
		pkcs11.NewAttribute(pkcs11.CKA_ID, id),
	}
}

func certTemplate(id []byte) []*pkcs11.Attribute {
	return []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_CERTIFICATE),
		pkcs11.NewAttribute(pkcs11.CKA_ID, id),
	}
}

// findKey returns the one key of class with CKA_ID id.
func (t *Token) findKey(s pkcs11.SessionHandle, class uint, id []byte) (pkcs11.ObjectHandle, error) {
	if len(id) == 0 {
		return 0, fmt.Errorf("%w: empty key ID", ErrKeyNotFound)
	}
	hs, err := t.find(s, keyTemplate(class, id), 2)
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

// find returns up to limit objects matching tmpl. Every find scans the
// whole token, so callers ask for as few as they need.
func (t *Token) find(s pkcs11.SessionHandle, tmpl []*pkcs11.Attribute, limit int) ([]pkcs11.ObjectHandle, error) {
	t.mod.copyMu.RLock() // not while the freeze test copies a key (copies)
	defer t.mod.copyMu.RUnlock()
	if err := t.lib.FindObjectsInit(s, tmpl); err != nil {
		return nil, ckr.Wrap("C_FindObjectsInit", err)
	}
	var out []pkcs11.ObjectHandle
	var err error
	for len(out) < limit {
		var hs []pkcs11.ObjectHandle
		hs, _, err = t.lib.FindObjects(s, min(limit-len(out), 64))
		if err != nil || len(hs) == 0 {
			break
		}
		out = append(out, hs...)
	}
	ferr := t.lib.FindObjectsFinal(s)
	if err != nil {
		return nil, ckr.Wrap("C_FindObjects", err)
	}
	if ferr != nil {
		return nil, ckr.Wrap("C_FindObjectsFinal", ferr)
	}
	return out, nil
}

// findAll returns every object matching tmpl.
func (t *Token) findAll(s pkcs11.SessionHandle, tmpl []*pkcs11.Attribute) ([]pkcs11.ObjectHandle, error) {
	return t.find(s, tmpl, int(^uint(0)>>1))
}

// keyAttrs are the private-key attributes the policy looks at. None is
// sensitive: miekg/pkcs11 drops the whole template when one attribute is
// CKR_ATTRIBUTE_SENSITIVE.
type keyAttrs struct {
	sign, sensitive, extractable      bool
	alwaysSensitive, neverExtractable bool
	local                             bool
	label                             string
	pub                               crypto.PublicKey // *rsa.PublicKey or *ecdsa.PublicKey
}

func (t *Token) readKeyAttrs(s pkcs11.SessionHandle, h pkcs11.ObjectHandle) (keyAttrs, error) {
	types := []uint{
		pkcs11.CKA_SIGN, pkcs11.CKA_SENSITIVE, pkcs11.CKA_EXTRACTABLE,
		pkcs11.CKA_ALWAYS_SENSITIVE, pkcs11.CKA_NEVER_EXTRACTABLE, pkcs11.CKA_LOCAL,
		pkcs11.CKA_LABEL, pkcs11.CKA_KEY_TYPE, pkcs11.CKA_ID,
	}
	v, err := t.attrs(s, h, types...)
	if err != nil {
		return keyAttrs{}, err
	}
	pub, err := t.readPublic(s, h, v[pkcs11.CKA_KEY_TYPE], v[pkcs11.CKA_ID])
	if err != nil {
		return keyAttrs{}, err
	}
	return keyAttrs{
		sign:             attrBool(v[pkcs11.CKA_SIGN]),
		sensitive:        attrBool(v[pkcs11.CKA_SENSITIVE]),
		extractable:      attrBool(v[pkcs11.CKA_EXTRACTABLE]),
		alwaysSensitive:  attrBool(v[pkcs11.CKA_ALWAYS_SENSITIVE]),
		neverExtractable: attrBool(v[pkcs11.CKA_NEVER_EXTRACTABLE]),
		local:            attrBool(v[pkcs11.CKA_LOCAL]),
		label:            string(v[pkcs11.CKA_LABEL]),
		pub:              pub,
	}, nil
}

// readPublic reads the public key of the private key h, whose CKA_KEY_TYPE
// and CKA_ID are keyType and id: an RSA private key carries its modulus and
// exponent; for an EC key the point is read from the public key object
// with the same ID (a private EC key has no CKA_EC_POINT).
func (t *Token) readPublic(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, keyType, id []byte) (crypto.PublicKey, error) {
	switch attrUint(keyType) {
	case pkcs11.CKK_RSA:
		v, err := t.attrs(s, h, pkcs11.CKA_MODULUS, pkcs11.CKA_PUBLIC_EXPONENT)
		if err != nil {
			return nil, err
		}
		return rsaPublic(v[pkcs11.CKA_MODULUS], v[pkcs11.CKA_PUBLIC_EXPONENT])
	case pkcs11.CKK_EC:
		hs, err := t.find(s, keyTemplate(pkcs11.CKO_PUBLIC_KEY, id), 2)
		if err != nil {
			return nil, err
		}
		if len(hs) != 1 {
			return nil, fmt.Errorf("%w: EC key %x has %d public key objects, want 1", ErrKeyPolicy, id, len(hs))
		}
		v, err := t.attrs(s, hs[0], pkcs11.CKA_EC_PARAMS, pkcs11.CKA_EC_POINT)
		if err != nil {
			return nil, err
		}
		return ecPublic(v[pkcs11.CKA_EC_PARAMS], v[pkcs11.CKA_EC_POINT])
	case ckkECEdwards:
		return t.edwardsPublic(s, id) // eddsa.go
	}
	return nil, fmt.Errorf("%w: key %x of CKA_KEY_TYPE %#x (RSA, EC or Ed25519)", ErrKeyPolicy, id, attrUint(keyType))
}

// attrUint decodes a CK_ULONG attribute (native byte order, as the module
// and miekg/pkcs11 encode it); a malformed value reads as all ones.
func attrUint(v []byte) uint {
	switch len(v) {
	case 8:
		return uint(binary.NativeEndian.Uint64(v))
	case 4:
		return uint(binary.NativeEndian.Uint32(v))
	}
	return ^uint(0)
}

// attrs reads the attributes types of h. Attributes the token does not
// return are absent from the map.
//
// One call reads them all. When the token refuses that call because one
// of them is unknown to it or sensitive (CKR_ATTRIBUTE_TYPE_INVALID, as
// opencryptoki answers for CKA_COPYABLE, or CKR_ATTRIBUTE_SENSITIVE;
// miekg/pkcs11 then returns nothing at all), they are read one at a time
// and the refused ones are left out.
func (t *Token) attrs(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, types ...uint) (map[uint][]byte, error) {
	v := make(map[uint][]byte, len(types))
	err := t.readAttrs(s, h, types, v)
	if len(types) == 1 || !attrRefused(err) {
		return v, err
	}
	for _, typ := range types {
		if err := t.readAttrs(s, h, []uint{typ}, v); err != nil && !attrRefused(err) {
			return nil, err
		}
	}
	return v, nil
}

func (t *Token) readAttrs(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, types []uint, into map[uint][]byte) error {
	tmpl := make([]*pkcs11.Attribute, len(types))
	for i, typ := range types {
		tmpl[i] = pkcs11.NewAttribute(typ, nil)
	}
	got, err := t.lib.GetAttributeValue(s, h, tmpl)
	if err != nil {
		return ckr.Wrap("C_GetAttributeValue", err)
	}
	for _, a := range got {
		if a != nil && a.Value != nil {
			into[a.Type] = a.Value
		}
	}
	return nil
}

// attrRefused reports whether err is a C_GetAttributeValue refusal of an
// attribute rather than of the object or session.
func attrRefused(err error) bool {
	c := ckr.RV(err)
	return c == pkcs11.CKR_ATTRIBUTE_TYPE_INVALID || c == pkcs11.CKR_ATTRIBUTE_SENSITIVE
}

// checkPolicy decides whether a key may sign.
func checkPolicy(a keyAttrs, minBits int, allowImported bool) error {
	var bad []string
	if !a.sign {
		bad = append(bad, "CKA_SIGN is false")
	}
	if !a.sensitive {
		bad = append(bad, "CKA_SENSITIVE is false")
	}
	if a.extractable {
		bad = append(bad, "CKA_EXTRACTABLE is true")
	}
	if !allowImported {
		if !a.alwaysSensitive {
			bad = append(bad, "CKA_ALWAYS_SENSITIVE is false")
		}
		if !a.neverExtractable {
			bad = append(bad, "CKA_NEVER_EXTRACTABLE is false")
		}
		if !a.local {
			bad = append(bad, "CKA_LOCAL is false (not generated in the token)")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrKeyPolicy, strings.Join(bad, ", "))
	}
	if rsaPub, ok := a.pub.(*rsa.PublicKey); ok && rsaPub.N.BitLen() < minBits {
		bits := rsaPub.N.BitLen()
		return fmt.Errorf("%w: %d bits, at least %d required", ErrWeakKey, bits, minBits)
	}
	return nil
}

func attrBool(v []byte) bool {
	return len(v) > 0 && v[0] != 0
}

// rsaPublic builds a public key from CKA_MODULUS and CKA_PUBLIC_EXPONENT.
func rsaPublic(modulus, exponent []byte) (*rsa.PublicKey, error) {
	if len(modulus) == 0 || len(exponent) == 0 {
		return nil, errors.New("hsm: RSA key without CKA_MODULUS or CKA_PUBLIC_EXPONENT")
	}
	e := new(big.Int).SetBytes(exponent)
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
		return nil, fmt.Errorf("hsm: unusable RSA public exponent %v", e)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(modulus), E: int(e.Int64())}, nil
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
	return t.generate(ctx, "RSA", what, label, mech, publicTemplate(bits), pkcs11.CKK_RSA, func(pub crypto.PublicKey) error {
		p, ok := pub.(*rsa.PublicKey)
		if !ok || p.N.BitLen() != bits || p.E != 65537 {
			return fmt.Errorf("hsm: token generated RSA-%d with exponent %d, asked for RSA-%d with 65537", KeyBits(pub), rsaExponent(pub), bits)
		}
		return nil
	})
}

func rsaExponent(pub crypto.PublicKey) int {
	if p, ok := pub.(*rsa.PublicKey); ok {
		return p.E
	}
	return 0
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
	if err := checkLabel(label); err != nil {
		return nil, err
	}
	id, err := newKeyID()
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
		hs, err := t.find(s, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)}, 1)
		if err != nil {
			return err
		}
		if len(hs) > 0 {
			return fmt.Errorf("%w: %q on token %q", ErrLabelExists, label, t.label)
		}
		if err := t.checkLoggedIn(s); err != nil {
			return err // private objects were invisible to the label check
		}
		hs, err = t.find(s, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_ID, id)}, 1)
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
		if errors.Is(err, errUnusablePublic) {
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
		pubH, privH, err := t.lib.GenerateKeyPair(s, []*pkcs11.Mechanism{mech}, o.apply(pubT), o.apply(privateTemplate(id, label, keyType)))
		if err == nil {
			return pubH, privH, nil
		}
		err = ckr.Wrap("C_GenerateKeyPair", err)
		switch {
		case o.copyable && ckr.RV(err) == pkcs11.CKR_ATTRIBUTE_TYPE_INVALID:
			t.noCopyable.Store(true)
			t.log.Info("hsm: the token does not know CKA_COPYABLE; key templates leave it out", "token", t.label, "cryptoki", t.caps.CryptokiVersion)
			continue
		case !o.fixedUsage && t.profile == ProfileAuto && templateRefusal(ckr.RV(err)):
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

// templateRefusal reports whether code is how tokens refuse a template
// whose usages differ from the ones they fix: tpm2-pkcs11 answers
// CKR_GENERAL_ERROR ("User specified and TPM specified attr mismatch").
func templateRefusal(code uint) bool {
	switch code {
	case pkcs11.CKR_TEMPLATE_INCONSISTENT, pkcs11.CKR_ATTRIBUTE_VALUE_INVALID, pkcs11.CKR_GENERAL_ERROR:
		return true
	}
	return false
}

// refusalCodes are the return values with which a token that answers
// refuses a request it cannot do: a mechanism, a parameter, a key size or
// a template. They are the caller's problem (ErrUnsupportedAlgorithm),
// never the token's.
var refusalCodes = map[uint]bool{
	pkcs11.CKR_ATTRIBUTE_TYPE_INVALID:  true,
	pkcs11.CKR_ATTRIBUTE_VALUE_INVALID: true,
	pkcs11.CKR_TEMPLATE_INCONSISTENT:   true,
	pkcs11.CKR_TEMPLATE_INCOMPLETE:     true,
	pkcs11.CKR_MECHANISM_INVALID:       true,
	pkcs11.CKR_MECHANISM_PARAM_INVALID: true,
	pkcs11.CKR_KEY_SIZE_RANGE:          true,
	pkcs11.CKR_CURVE_NOT_SUPPORTED:     true,
	pkcs11.CKR_DOMAIN_PARAMS_INVALID:   true,
	pkcs11.CKR_FUNCTION_NOT_SUPPORTED:  true,
	pkcs11.CKR_KEY_TYPE_INCONSISTENT:   true,
}

// refused turns a refusal (refusalCodes, or an ambiguous code while the
// token still answers C_GetTokenInfo) into ErrUnsupportedAlgorithm naming
// what was asked; other errors pass through. Called inside run.
func (t *Token) refused(what string, err error) error {
	code := ckr.RV(err)
	if !refusalCodes[code] {
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

// templateOptions are the adaptations of the key templates to the token.
type templateOptions struct {
	copyable   bool // CKA_COPYABLE false is set
	fixedUsage bool // CKA_ENCRYPT and CKA_DECRYPT are left to the token
}

func (t *Token) templateOptions() templateOptions {
	return templateOptions{copyable: !t.noCopyable.Load(), fixedUsage: t.fixedUsage.Load()}
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

// apply returns tmpl without the attributes o leaves out.
func (o templateOptions) apply(tmpl []*pkcs11.Attribute) []*pkcs11.Attribute {
	return slices.DeleteFunc(slices.Clone(tmpl), func(a *pkcs11.Attribute) bool {
		switch a.Type {
		case pkcs11.CKA_COPYABLE:
			return !o.copyable
		case pkcs11.CKA_ENCRYPT, pkcs11.CKA_DECRYPT:
			return o.fixedUsage
		}
		return false
	})
}

// checkGenerated reads the new key pair back (the private key's public
// half, from the private object for RSA, from the public object for EC),
// checks it with want, checks that the private key got the template, and
// returns what the token does not keep of the freeze (freezeDefects).
func (t *Token) checkGenerated(s pkcs11.SessionHandle, privH pkcs11.ObjectHandle, label string, want func(crypto.PublicKey) error) (crypto.PublicKey, []string, error) {
	a, err := t.readKeyAttrs(s, privH)
	if err != nil {
		return nil, nil, err
	}
	if err := want(a.pub); err != nil {
		return nil, nil, err
	}
	if err := checkPolicy(a, KeyBits(a.pub), false); err != nil {
		return nil, nil, err
	}
	// A token that says it ignored the freeze would leave a key anyone
	// with the user PIN can relabel or clone: refused. A token that says
	// it kept it but does not is found out by freezeDefects.
	v, err := t.attrs(s, privH, pkcs11.CKA_MODIFIABLE, pkcs11.CKA_COPYABLE)
	if err != nil {
		return nil, nil, err
	}
	if attrBool(v[pkcs11.CKA_MODIFIABLE]) || attrBool(v[pkcs11.CKA_COPYABLE]) {
		return nil, nil, fmt.Errorf("%w: the token left the new private key modifiable or copyable", ErrKeyPolicy)
	}
	defects, err := t.freezeDefects(s, privH, label)
	return a.pub, defects, err
}

// freezeDefects tests the freeze of the private key h, labelled label:
// a C_SetAttributeValue of CKA_LABEL with its own value must be refused
// (tpm2-pkcs11 accepts it while CKA_MODIFIABLE reads false), so must a
// C_CopyObject into a session object (opencryptoki accepts it), and the
// token must not have given the key a usage beyond signing (CKA_DECRYPT,
// CKA_UNWRAP, CKA_DERIVE, CKA_SIGN_RECOVER; a TPM signs PKCS#1 v1.5 as a
// raw RSA decrypt, so it gives RSA keys decrypt). The same-value write
// changes nothing where it is accepted.
//
// A key that reads CKA_MODIFIABLE or CKA_COPYABLE true is not written or
// copied: the token says itself that the key is not frozen, and the test
// would only disturb other sessions (SoftHSM2 rewrites the object's file
// on an accepted write, and a find in another session meanwhile misses
// the key or meets it twice; CheckKeys runs while requests are served).
func (t *Token) freezeDefects(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, label string) ([]string, error) {
	said, err := t.attrs(s, h, pkcs11.CKA_MODIFIABLE, pkcs11.CKA_COPYABLE)
	if err != nil {
		return nil, err
	}
	var defects []string
	if attrBool(said[pkcs11.CKA_MODIFIABLE]) {
		defects = append(defects, "CKA_LABEL can be changed (CKA_MODIFIABLE true)")
	} else if err := t.lib.SetAttributeValue(s, h, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)}); err == nil {
		defects = append(defects, "CKA_LABEL can be changed (C_SetAttributeValue accepted)")
	} else if !freezeRefusal(ckr.RV(err)) {
		var u *untestedError
		if err := untested(ckr.Wrap("C_SetAttributeValue", err)); !errors.As(err, &u) {
			return nil, err
		}
		defects = append(defects, u.defect())
	}
	// A copy into a session object (gone with the session, destroyed at
	// once) must be refused too: opencryptoki 3.8 does not know
	// CKA_COPYABLE and copies any key.
	if attrBool(said[pkcs11.CKA_COPYABLE]) {
		defects = append(defects, "can be copied (CKA_COPYABLE true)")
	} else {
		copied, err := t.copies(s, h)
		var u *untestedError
		switch {
		case errors.As(err, &u):
			defects = append(defects, u.defect())
		case err != nil:
			return nil, err
		case copied:
			defects = append(defects, "can be copied (C_CopyObject accepted)")
		}
	}
	v, err := t.attrs(s, h, pkcs11.CKA_DECRYPT, pkcs11.CKA_UNWRAP, pkcs11.CKA_DERIVE, pkcs11.CKA_SIGN_RECOVER)
	if err != nil {
		return nil, err
	}
	for _, u := range []struct {
		typ  uint
		name string
	}{
		{pkcs11.CKA_DECRYPT, "can decrypt (CKA_DECRYPT)"},
		{pkcs11.CKA_UNWRAP, "can unwrap (CKA_UNWRAP)"},
		{pkcs11.CKA_DERIVE, "can derive (CKA_DERIVE)"},
		{pkcs11.CKA_SIGN_RECOVER, "can sign with recovery (CKA_SIGN_RECOVER)"},
	} {
		if attrBool(v[u.typ]) {
			defects = append(defects, u.name)
		}
	}
	return defects, nil
}

// freezeRefusal reports whether code is a token's explicit refusal of the
// freeze test's write (C_SetAttributeValue of CKA_LABEL) or copy
// (C_CopyObject), among the return values PKCS#11 v2.40 §5.7 lists for
// them: CKR_ACTION_PROHIBITED (CKA_MODIFIABLE or CKA_COPYABLE false, or
// the token's policy), CKR_ATTRIBUTE_READ_ONLY (the attribute may not be
// modified), CKR_TEMPLATE_INCONSISTENT (the token's answer for a read-only
// object), CKR_TOKEN_WRITE_PROTECTED and CKR_FUNCTION_NOT_SUPPORTED (the
// module has no such function: nothing can be written or copied).
//
// Nothing else proves the freeze: CKR_ATTRIBUTE_TYPE_INVALID and
// CKR_ATTRIBUTE_VALUE_INVALID refuse an attribute every key has and a
// value it already has, CKR_ARGUMENTS_BAD, CKR_HOST_MEMORY and the rest
// say the call went wrong, and the ambiguous CKR_GENERAL_ERROR,
// CKR_FUNCTION_FAILED and CKR_DEVICE_MEMORY may be anything (untested).
func freezeRefusal(code uint) bool {
	switch code {
	case pkcs11.CKR_ACTION_PROHIBITED, pkcs11.CKR_ATTRIBUTE_READ_ONLY, pkcs11.CKR_TEMPLATE_INCONSISTENT,
		pkcs11.CKR_TOKEN_WRITE_PROTECTED, pkcs11.CKR_FUNCTION_NOT_SUPPORTED:
		return true
	}
	return false
}

// untestedError is a freeze test the token neither passed nor failed: an
// answer that is not an explicit refusal (freezeRefusal). It is a defect,
// so that pkcs11.require_immutable_keys refuses the key.
type untestedError struct{ err error }

func (e *untestedError) Error() string { return e.err.Error() }
func (e *untestedError) Unwrap() error { return e.err }

func (e *untestedError) defect() string {
	return "freeze could not be tested (" + e.err.Error() + ")"
}

// untested turns a freeze test's unexplained answer err into an
// untestedError, the defect that says so, when it is the caller class,
// and leaves other errors as they are: a
// session, login or device error is recovered from as any other, and an
// ambiguous one (CKR_GENERAL_ERROR, ...) fails the operation, because the
// session it came from is discarded and the token asked whether it still
// answers (Token.run); a generated key is then destroyed, and CheckKeys
// fails naming the code.
func untested(err error) error {
	if ckr.Classify(err) != ckr.Caller {
		return err
	}
	return &untestedError{err}
}

// probeID and probeLabel are the CKA_ID and CKA_LABEL of the copy the
// freeze test makes (copies). The ID is longer than any ID signd
// generates (idLen), so it names no key.
var probeID = []byte("signd freeze probe")

const probeLabel = "signd freeze probe (a session object; gone with its session)"

// probeTemplate is what the freeze test's copy changes: a session object
// (CKA_TOKEN false, PKCS#11 v2.40 §5.7 C_CopyObject lets a copy change
// it), with an ID and a label of its own, so that no lookup by the key's
// CKA_ID, in any session of the application, meets the copy while it
// exists.
func probeTemplate() []*pkcs11.Attribute {
	return []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false),
		pkcs11.NewAttribute(pkcs11.CKA_ID, probeID),
		pkcs11.NewAttribute(pkcs11.CKA_LABEL, probeLabel),
	}
}

// copies reports whether the token copies the key h into a session
// object, destroying the copy at once.
//
// The copy is asked with probeTemplate. A token may refuse to change
// CKA_ID or CKA_LABEL in a copy of a key whose CKA_MODIFIABLE is false
// (v2.40 lets a copy's template change only what "can ordinarily be
// modified") and still copy the key as it is: that refusal proves
// nothing, so a refused probe template is followed by a plain copy
// (CKA_TOKEN false only), whose answer decides. That copy carries the
// key's CKA_ID, but it is a session object and key lookups match token
// objects only (keyTemplate). No find runs meanwhile (module.copyMu): a
// token may give the copy its template only after making it (SoftHSM2
// does). A copy that cannot be destroyed lives as
// long as its session: the session is discarded (closing it destroys the
// session objects it made, v2.40 §5.6 C_CloseSession).
func (t *Token) copies(s pkcs11.SessionHandle, h pkcs11.ObjectHandle) (bool, error) {
	// Finds wait until the copy is gone, or has its template (module.copyMu).
	t.mod.copyMu.Lock()
	defer t.mod.copyMu.Unlock()
	cp, err := t.lib.CopyObject(s, h, probeTemplate())
	if code := ckr.RV(err); freezeRefusal(code) || code == pkcs11.CKR_ATTRIBUTE_TYPE_INVALID || code == pkcs11.CKR_ATTRIBUTE_VALUE_INVALID {
		cp, err = t.lib.CopyObject(s, h, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false)})
	}
	switch {
	case err != nil && freezeRefusal(ckr.RV(err)):
		return false, nil
	case err != nil:
		return false, untested(ckr.Wrap("C_CopyObject", err))
	}
	if err := t.lib.DestroyObject(s, cp); err != nil {
		return true, ckr.Discard(fmt.Errorf("the copy made to test the freeze could not be destroyed: %w", ckr.Wrap("C_DestroyObject", err)))
	}
	return true, nil
}

// publicTemplate is the RSA public key template, less ID and label.
func publicTemplate(bits int) []*pkcs11.Attribute {
	return []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PUBLIC_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_RSA),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
		pkcs11.NewAttribute(pkcs11.CKA_VERIFY, true),
		pkcs11.NewAttribute(pkcs11.CKA_ENCRYPT, false),
		pkcs11.NewAttribute(pkcs11.CKA_WRAP, false),
		pkcs11.NewAttribute(pkcs11.CKA_MODULUS_BITS, bits),
		pkcs11.NewAttribute(pkcs11.CKA_PUBLIC_EXPONENT, []byte{1, 0, 1}),
		pkcs11.NewAttribute(pkcs11.CKA_MODIFIABLE, false),
	}
}

// privateTemplate spells out every usage: SoftHSM2's defaults for a
// private key are DECRYPT and UNWRAP true, SENSITIVE false. The key is
// frozen at creation (PKCS#11 v2.40 §4.4): CKA_MODIFIABLE false, so no
// holder of the user PIN can relabel it, move its CKA_ID or switch a usage
// back on, and CKA_COPYABLE false, so C_CopyObject cannot clone it into an
// object with other attributes. ID and label are therefore set here, once;
// nothing later edits a key (a certificate is a separate object). An EC
// key gets CKA_DECRYPT/CKA_UNWRAP false too (SoftHSM2 would otherwise
// report both true, its defaults for any private key) and no CKA_DERIVE,
// so it cannot do ECDH. templateOptions.apply takes out what the
// token does not know or fixes itself.
func privateTemplate(id []byte, label string, keyType uint) []*pkcs11.Attribute {
	tmpl := []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PRIVATE_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, keyType),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
		pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, true),
		pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, true),
		pkcs11.NewAttribute(pkcs11.CKA_EXTRACTABLE, false),
		pkcs11.NewAttribute(pkcs11.CKA_SIGN, true),
		pkcs11.NewAttribute(pkcs11.CKA_SIGN_RECOVER, false),
		pkcs11.NewAttribute(pkcs11.CKA_DERIVE, false),
		pkcs11.NewAttribute(pkcs11.CKA_MODIFIABLE, false),
		pkcs11.NewAttribute(pkcs11.CKA_COPYABLE, false),
		pkcs11.NewAttribute(pkcs11.CKA_ID, id),
		pkcs11.NewAttribute(pkcs11.CKA_LABEL, label),
		pkcs11.NewAttribute(pkcs11.CKA_DECRYPT, false),
		pkcs11.NewAttribute(pkcs11.CKA_UNWRAP, false),
	}
	_ = keyType
	return tmpl
}

func checkLabel(label string) error {
	switch {
	case label == "":
		return errors.New("hsm: empty key label")
	case len(label) > maxLabelLen:
		return fmt.Errorf("hsm: key label longer than %d bytes", maxLabelLen)
	case !utf8.ValidString(label):
		return errors.New("hsm: key label is not UTF-8")
	}
	return nil
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
		hs, err := t.findAll(s, []*pkcs11.Attribute{
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
			v, err := t.attrs(s, h, pkcs11.CKA_ID, pkcs11.CKA_LABEL, pkcs11.CKA_KEY_TYPE)
			if err != nil {
				return err
			}
			if kt := attrUint(v[pkcs11.CKA_KEY_TYPE]); kt != pkcs11.CKK_RSA && kt != pkcs11.CKK_EC && kt != ckkECEdwards {
				continue // not a signing key this package makes
			}
			pub, err := t.readPublic(s, h, v[pkcs11.CKA_KEY_TYPE], v[pkcs11.CKA_ID])
			if err != nil {
				return fmt.Errorf("key %x: %w", v[pkcs11.CKA_ID], err)
			}
			k := KeyInfo{ID: v[pkcs11.CKA_ID], Label: string(v[pkcs11.CKA_LABEL]), Bits: KeyBits(pub), Public: pub}
			if defects {
				if k.Defects, err = t.freezeDefects(s, h, k.Label); err != nil {
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
		priv, err := t.find(s, keyTemplate(pkcs11.CKO_PRIVATE_KEY, id), 2)
		if err != nil {
			return err
		}
		pub, err := t.find(s, keyTemplate(pkcs11.CKO_PUBLIC_KEY, id), 2)
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
		certs, err := t.findAll(s, certTemplate(id))
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

// Key returns the signer for the RSA or EC key pair with CKA_ID id. The private
// key must satisfy the key policy: CKA_SIGN, CKA_SENSITIVE, not
// CKA_EXTRACTABLE, generated in the token (CKA_LOCAL, CKA_ALWAYS_SENSITIVE,
// CKA_NEVER_EXTRACTABLE; waived by Config.AllowImportedKeys), and at least
// Config.MinRSABits. Its handle is cached.
func (t *Token) Key(ctx context.Context, id []byte) (*Key, error) {
	var ck cachedKey
	err := t.run(ctx, "load key", func(s pkcs11.SessionHandle) error {
		var err error
		ck, err = t.keyFor(s, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Key{t: t, id: bytes.Clone(id), label: ck.label, pub: ck.pub}, nil
}

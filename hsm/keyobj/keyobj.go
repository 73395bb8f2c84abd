package keyobj

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/cryptoki"
)

// Objects reads and tests the objects of one token through its module.
type Objects struct {
	Lib cryptoki.Ctx
	// CopyMu is the module's: finds (Find) hold it for reading, the
	// freeze test's copy (FreezeDefects) for writing, so that no find
	// meets the copy before the token gave it its template.
	CopyMu *sync.RWMutex
}

// Refusal reports whether code is a token's refusal of a request it
// cannot do: a mechanism, a parameter, a key size or a template
// (refusalCodes).
func Refusal(code uint) bool { return refusalCodes[code] }

// IDLen is the length of the CKA_ID package hsm chooses for a new key (NewID).
const IDLen = 16

// maxLabelLen bounds labels; CKA_LABEL has no limit, but humans read them.
const maxLabelLen = 128

// KeyTemplate matches the key of class with CKA_ID id, RSA or EC (the
// type is read and checked once found). The class matters: a certificate
// imported for the key shares its ID. Only token objects match: signd's
// keys live on the token, and a session object (visible to every session
// of the application) is never one of them, such as a copy the freeze
// test made (FreezeDefects) while another session looks the key up.
func KeyTemplate(class uint, id []byte) []*pkcs11.Attribute {
	return []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, class),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
		pkcs11.NewAttribute(pkcs11.CKA_ID, id),
	}
}

func CertTemplate(id []byte) []*pkcs11.Attribute {
	return []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_CERTIFICATE),
		pkcs11.NewAttribute(pkcs11.CKA_ID, id),
	}
}

// Find returns up to limit objects matching tmpl. Every find scans the
// whole token, so callers ask for as few as they need.
func (o Objects) Find(s pkcs11.SessionHandle, tmpl []*pkcs11.Attribute, limit int) ([]pkcs11.ObjectHandle, error) {
	o.CopyMu.RLock() // not while the freeze test copies a key (copies)
	defer o.CopyMu.RUnlock()
	if err := o.Lib.FindObjectsInit(s, tmpl); err != nil {
		return nil, ckr.Wrap("C_FindObjectsInit", err)
	}
	var out []pkcs11.ObjectHandle
	var err error
	for len(out) < limit {
		var hs []pkcs11.ObjectHandle
		hs, _, err = o.Lib.FindObjects(s, min(limit-len(out), 64))
		if err != nil || len(hs) == 0 {
			break
		}
		out = append(out, hs...)
	}
	ferr := o.Lib.FindObjectsFinal(s)
	if err != nil {
		return nil, ckr.Wrap("C_FindObjects", err)
	}
	if ferr != nil {
		return nil, ckr.Wrap("C_FindObjectsFinal", ferr)
	}
	return out, nil
}

// FindAll returns every object matching tmpl.
func (o Objects) FindAll(s pkcs11.SessionHandle, tmpl []*pkcs11.Attribute) ([]pkcs11.ObjectHandle, error) {
	return o.Find(s, tmpl, int(^uint(0)>>1))
}

// KeyAttrs are the private-key attributes the policy looks at. None is
// sensitive: miekg/pkcs11 drops the whole template when one attribute is
// CKR_ATTRIBUTE_SENSITIVE.
type KeyAttrs struct {
	Sign, Sensitive, Extractable      bool
	AlwaysSensitive, NeverExtractable bool
	Local                             bool
	Label                             string
	Pub                               crypto.PublicKey // *rsa.PublicKey or *ecdsa.PublicKey
}

func (o Objects) ReadKeyAttrs(s pkcs11.SessionHandle, h pkcs11.ObjectHandle) (KeyAttrs, error) {
	types := []uint{
		pkcs11.CKA_SIGN, pkcs11.CKA_SENSITIVE, pkcs11.CKA_EXTRACTABLE,
		pkcs11.CKA_ALWAYS_SENSITIVE, pkcs11.CKA_NEVER_EXTRACTABLE, pkcs11.CKA_LOCAL,
		pkcs11.CKA_LABEL, pkcs11.CKA_KEY_TYPE, pkcs11.CKA_ID,
	}
	v, err := o.Attrs(s, h, types...)
	if err != nil {
		return KeyAttrs{}, err
	}
	pub, err := o.ReadPublic(s, h, v[pkcs11.CKA_KEY_TYPE], v[pkcs11.CKA_ID])
	if err != nil {
		return KeyAttrs{}, err
	}
	return KeyAttrs{
		Sign:             AttrBool(v[pkcs11.CKA_SIGN]),
		Sensitive:        AttrBool(v[pkcs11.CKA_SENSITIVE]),
		Extractable:      AttrBool(v[pkcs11.CKA_EXTRACTABLE]),
		AlwaysSensitive:  AttrBool(v[pkcs11.CKA_ALWAYS_SENSITIVE]),
		NeverExtractable: AttrBool(v[pkcs11.CKA_NEVER_EXTRACTABLE]),
		Local:            AttrBool(v[pkcs11.CKA_LOCAL]),
		Label:            string(v[pkcs11.CKA_LABEL]),
		Pub:              pub,
	}, nil
}

// ReadPublic reads the public key of the private key h, whose CKA_KEY_TYPE
// and CKA_ID are keyType and id: an RSA private key carries its modulus and
// exponent; for an EC key the point is read from the public key object
// with the same ID (a private EC key has no CKA_EC_POINT).
func (o Objects) ReadPublic(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, keyType, id []byte) (crypto.PublicKey, error) {
	switch AttrUint(keyType) {
	case pkcs11.CKK_RSA:
		v, err := o.Attrs(s, h, pkcs11.CKA_MODULUS, pkcs11.CKA_PUBLIC_EXPONENT)
		if err != nil {
			return nil, err
		}
		return rsaPublic(v[pkcs11.CKA_MODULUS], v[pkcs11.CKA_PUBLIC_EXPONENT])
	case pkcs11.CKK_EC:
		hs, err := o.Find(s, KeyTemplate(pkcs11.CKO_PUBLIC_KEY, id), 2)
		if err != nil {
			return nil, err
		}
		if len(hs) != 1 {
			return nil, fmt.Errorf("%w: EC key %x has %d public key objects, want 1", ckr.ErrKeyPolicy, id, len(hs))
		}
		v, err := o.Attrs(s, hs[0], pkcs11.CKA_EC_PARAMS, pkcs11.CKA_EC_POINT)
		if err != nil {
			return nil, err
		}
		return ecPublic(v[pkcs11.CKA_EC_PARAMS], v[pkcs11.CKA_EC_POINT])
	case CKKECEdwards:
		return o.EdwardsPublic(s, id)
	}
	return nil, fmt.Errorf("%w: key %x of CKA_KEY_TYPE %#x (RSA, EC or Ed25519)", ckr.ErrKeyPolicy, id, AttrUint(keyType))
}

// AttrUint decodes a CK_ULONG attribute (native byte order, as the module
// and miekg/pkcs11 encode it); a malformed value reads as all ones.
func AttrUint(v []byte) uint {
	switch len(v) {
	case 8:
		return uint(binary.NativeEndian.Uint64(v))
	case 4:
		return uint(binary.NativeEndian.Uint32(v))
	}
	return ^uint(0)
}

// Attrs reads the attributes types of h. Attributes the token does not
// return are absent from the map.
//
// One call reads them all. When the token refuses that call because one
// of them is unknown to it or sensitive (CKR_ATTRIBUTE_TYPE_INVALID, as
// opencryptoki answers for CKA_COPYABLE, or CKR_ATTRIBUTE_SENSITIVE;
// miekg/pkcs11 then returns nothing at all), they are read one at a time
// and the refused ones are left out.
func (o Objects) Attrs(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, types ...uint) (map[uint][]byte, error) {
	v := make(map[uint][]byte, len(types))
	err := o.readAttrs(s, h, types, v)
	if len(types) == 1 || !attrRefused(err) {
		return v, err
	}
	for _, typ := range types {
		if err := o.readAttrs(s, h, []uint{typ}, v); err != nil && !attrRefused(err) {
			return nil, err
		}
	}
	return v, nil
}

func (o Objects) readAttrs(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, types []uint, into map[uint][]byte) error {
	tmpl := make([]*pkcs11.Attribute, len(types))
	for i, typ := range types {
		tmpl[i] = pkcs11.NewAttribute(typ, nil)
	}
	got, err := o.Lib.GetAttributeValue(s, h, tmpl)
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

// CheckPolicy decides whether a key may sign.
func CheckPolicy(a KeyAttrs, minBits int, allowImported bool) error {
	var bad []string
	if !a.Sign {
		bad = append(bad, "CKA_SIGN is false")
	}
	if !a.Sensitive {
		bad = append(bad, "CKA_SENSITIVE is false")
	}
	if a.Extractable {
		bad = append(bad, "CKA_EXTRACTABLE is true")
	}
	if !allowImported {
		if !a.AlwaysSensitive {
			bad = append(bad, "CKA_ALWAYS_SENSITIVE is false")
		}
		if !a.NeverExtractable {
			bad = append(bad, "CKA_NEVER_EXTRACTABLE is false")
		}
		if !a.Local {
			bad = append(bad, "CKA_LOCAL is false (not generated in the token)")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ckr.ErrKeyPolicy, strings.Join(bad, ", "))
	}
	if rsaPub, ok := a.Pub.(*rsa.PublicKey); ok && rsaPub.N.BitLen() < minBits {
		bits := rsaPub.N.BitLen()
		return fmt.Errorf("%w: %d bits, at least %d required", ckr.ErrWeakKey, bits, minBits)
	}
	return nil
}

func AttrBool(v []byte) bool {
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

func RSAExponent(pub crypto.PublicKey) int {
	if p, ok := pub.(*rsa.PublicKey); ok {
		return p.E
	}
	return 0
}

// TemplateRefusal reports whether code is how tokens refuse a template
// whose usages differ from the ones they fix: tpm2-pkcs11 answers
// CKR_GENERAL_ERROR ("User specified and TPM specified attr mismatch").
func TemplateRefusal(code uint) bool {
	switch code {
	case pkcs11.CKR_TEMPLATE_INCONSISTENT, pkcs11.CKR_ATTRIBUTE_VALUE_INVALID, pkcs11.CKR_GENERAL_ERROR:
		return true
	}
	return false
}

// refusalCodes are the return values with which a token that answers
// refuses a request it cannot do: a mechanism, a parameter, a key size or
// a template. They are the caller's problem (ckr.ErrUnsupportedAlgorithm),
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

// Options are the adaptations of the key templates to the token.
type Options struct {
	Copyable   bool // CKA_COPYABLE false is set
	FixedUsage bool // CKA_ENCRYPT and CKA_DECRYPT are left to the token
}

// Apply returns tmpl without the attributes o leaves out.
func (o Options) Apply(tmpl []*pkcs11.Attribute) []*pkcs11.Attribute {
	return slices.DeleteFunc(slices.Clone(tmpl), func(a *pkcs11.Attribute) bool {
		switch a.Type {
		case pkcs11.CKA_COPYABLE:
			return !o.Copyable
		case pkcs11.CKA_ENCRYPT, pkcs11.CKA_DECRYPT:
			return o.FixedUsage
		}
		return false
	})
}

// FreezeDefects tests the freeze of the private key h, labelled label:
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
func (o Objects) FreezeDefects(s pkcs11.SessionHandle, h pkcs11.ObjectHandle, label string) ([]string, error) {
	said, err := o.Attrs(s, h, pkcs11.CKA_MODIFIABLE, pkcs11.CKA_COPYABLE)
	if err != nil {
		return nil, err
	}
	var defects []string
	if AttrBool(said[pkcs11.CKA_MODIFIABLE]) {
		defects = append(defects, "CKA_LABEL can be changed (CKA_MODIFIABLE true)")
	} else if err := o.Lib.SetAttributeValue(s, h, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)}); err == nil {
		defects = append(defects, "CKA_LABEL can be changed (C_SetAttributeValue accepted)")
	} else if !FreezeRefusal(ckr.RV(err)) {
		var u *untestedError
		if err := untested(ckr.Wrap("C_SetAttributeValue", err)); !errors.As(err, &u) {
			return nil, err
		}
		defects = append(defects, u.defect())
	}
	// A copy into a session object (gone with the session, destroyed at
	// once) must be refused too: opencryptoki 3.8 does not know
	// CKA_COPYABLE and copies any key.
	if AttrBool(said[pkcs11.CKA_COPYABLE]) {
		defects = append(defects, "can be copied (CKA_COPYABLE true)")
	} else {
		copied, err := o.copies(s, h)
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
	v, err := o.Attrs(s, h, pkcs11.CKA_DECRYPT, pkcs11.CKA_UNWRAP, pkcs11.CKA_DERIVE, pkcs11.CKA_SIGN_RECOVER)
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
		if AttrBool(v[u.typ]) {
			defects = append(defects, u.name)
		}
	}
	return defects, nil
}

// FreezeRefusal reports whether code is a token's explicit refusal of the
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
func FreezeRefusal(code uint) bool {
	switch code {
	case pkcs11.CKR_ACTION_PROHIBITED, pkcs11.CKR_ATTRIBUTE_READ_ONLY, pkcs11.CKR_TEMPLATE_INCONSISTENT,
		pkcs11.CKR_TOKEN_WRITE_PROTECTED, pkcs11.CKR_FUNCTION_NOT_SUPPORTED:
		return true
	}
	return false
}

// untestedError is a freeze test the token neither passed nor failed: an
// answer that is not an explicit refusal (FreezeRefusal). It is a defect,
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
// answers (hsm.Token.run); a generated key is then destroyed, and CheckKeys
// fails naming the code.
func untested(err error) error {
	if ckr.Classify(err) != ckr.Caller {
		return err
	}
	return &untestedError{err}
}

// probeID and probeLabel are the CKA_ID and CKA_LABEL of the copy the
// freeze test makes (copies). The ID is longer than any ID signd
// generates (IDLen), so it names no key.
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
// objects only (KeyTemplate). No find runs meanwhile (CopyMu): a
// token may give the copy its template only after making it (SoftHSM2
// does). A copy that cannot be destroyed lives as
// long as its session: the session is discarded (closing it destroys the
// session objects it made, v2.40 §5.6 C_CloseSession).
func (o Objects) copies(s pkcs11.SessionHandle, h pkcs11.ObjectHandle) (bool, error) {
	// Finds wait until the copy is gone, or has its template (CopyMu).
	o.CopyMu.Lock()
	defer o.CopyMu.Unlock()
	cp, err := o.Lib.CopyObject(s, h, probeTemplate())
	if code := ckr.RV(err); FreezeRefusal(code) || code == pkcs11.CKR_ATTRIBUTE_TYPE_INVALID || code == pkcs11.CKR_ATTRIBUTE_VALUE_INVALID {
		cp, err = o.Lib.CopyObject(s, h, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false)})
	}
	switch {
	case err != nil && FreezeRefusal(ckr.RV(err)):
		return false, nil
	case err != nil:
		return false, untested(ckr.Wrap("C_CopyObject", err))
	}
	if err := o.Lib.DestroyObject(s, cp); err != nil {
		return true, ckr.Discard(fmt.Errorf("the copy made to test the freeze could not be destroyed: %w", ckr.Wrap("C_DestroyObject", err)))
	}
	return true, nil
}

// RSAPublicTemplate is the RSA public key template, less ID and label.
func RSAPublicTemplate(bits int) []*pkcs11.Attribute {
	return publicTemplate(pkcs11.CKK_RSA,
		pkcs11.NewAttribute(pkcs11.CKA_ENCRYPT, false),
		pkcs11.NewAttribute(pkcs11.CKA_WRAP, false),
		pkcs11.NewAttribute(pkcs11.CKA_MODULUS_BITS, bits),
		pkcs11.NewAttribute(pkcs11.CKA_PUBLIC_EXPONENT, []byte{1, 0, 1}),
	)
}

// publicTemplate is the public key template of keyType, less ID and
// label: a token object that verifies and cannot be changed, with attrs,
// what its type needs, between.
func publicTemplate(keyType uint, attrs ...*pkcs11.Attribute) []*pkcs11.Attribute {
	tmpl := []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PUBLIC_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, keyType),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
		pkcs11.NewAttribute(pkcs11.CKA_VERIFY, true),
	}
	tmpl = append(tmpl, attrs...)
	return append(tmpl, pkcs11.NewAttribute(pkcs11.CKA_MODIFIABLE, false))
}

// PrivateTemplate spells out every usage: SoftHSM2's defaults for a
// private key are DECRYPT and UNWRAP true, SENSITIVE false. The key is
// frozen at creation (PKCS#11 v2.40 §4.4): CKA_MODIFIABLE false, so no
// holder of the user PIN can relabel it, move its CKA_ID or switch a usage
// back on, and CKA_COPYABLE false, so C_CopyObject cannot clone it into an
// object with other attributes. ID and label are therefore set here, once;
// nothing later edits a key (a certificate is a separate object). An EC
// key gets CKA_DECRYPT/CKA_UNWRAP false too (SoftHSM2 would otherwise
// report both true, its defaults for any private key) and no CKA_DERIVE,
// so it cannot do ECDH. Options.Apply takes out what the
// token does not know or fixes itself.
func PrivateTemplate(id []byte, label string, keyType uint) []*pkcs11.Attribute {
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

func CheckLabel(label string) error {
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

// Named curves (RFC 5480 §2.1.1.1) the token may hold keys on.
var (
	oidP256 = asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7}
	oidP384 = asn1.ObjectIdentifier{1, 3, 132, 0, 34}
	oidP521 = asn1.ObjectIdentifier{1, 3, 132, 0, 35}
)

// CurveParams returns the DER CKA_EC_PARAMS (a namedCurve OID) of a
// supported curve: P-256, P-384 or P-521.
func CurveParams(c elliptic.Curve) ([]byte, error) {
	switch c {
	case elliptic.P256():
		return asn1.Marshal(oidP256)
	case elliptic.P384():
		return asn1.Marshal(oidP384)
	case elliptic.P521():
		return asn1.Marshal(oidP521)
	}
	name := "nil"
	if c != nil {
		name = c.Params().Name
	}
	return nil, fmt.Errorf("%w: curve %s (P-256, P-384 or P-521)", ckr.ErrUnsupportedAlgorithm, name)
}

// curveOf parses CKA_EC_PARAMS: only the named curves P-256, P-384 and
// P-521.
func curveOf(params []byte) (elliptic.Curve, error) {
	var oid asn1.ObjectIdentifier
	if rest, err := asn1.Unmarshal(params, &oid); err != nil || len(rest) != 0 {
		return nil, errors.New("hsm: EC key whose CKA_EC_PARAMS is not a named curve")
	}
	switch {
	case oid.Equal(oidP256):
		return elliptic.P256(), nil
	case oid.Equal(oidP384):
		return elliptic.P384(), nil
	case oid.Equal(oidP521):
		return elliptic.P521(), nil
	}
	return nil, fmt.Errorf("%w: EC key on curve %v (P-256, P-384 or P-521)", ckr.ErrKeyPolicy, oid)
}

// ecPublic builds a public key from CKA_EC_PARAMS and CKA_EC_POINT. The
// point is a DER OCTET STRING holding the uncompressed point (PKCS#11
// v2.40 §2.3.3); a bare point is accepted too, as some tokens return it.
func ecPublic(params, point []byte) (*ecdsa.PublicKey, error) {
	curve, err := curveOf(params)
	if err != nil {
		return nil, err
	}
	if len(point) == 0 {
		return nil, fmt.Errorf("%w: EC key without CKA_EC_POINT", ErrUnusablePublic)
	}
	var raw []byte
	if rest, err := asn1.Unmarshal(point, &raw); err != nil || len(rest) != 0 {
		raw = point
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: EC key with an unusable CKA_EC_POINT: %w", ErrUnusablePublic, err)
	}
	return pub, nil
}

// ErrUnusablePublic means the token returned a public key that does not
// parse (tpm2-pkcs11 1.9 returns a malformed CKA_EC_POINT for P-521).
var ErrUnusablePublic = errors.New("hsm: unusable public key")

// IsEC reports whether pub is an ECDSA public key.
func IsEC(pub crypto.PublicKey) bool {
	_, ok := pub.(*ecdsa.PublicKey)
	return ok
}

// KeyBits is the size of a public key: the RSA modulus or the EC curve
// (256 for Ed25519); 0 for another type.
func KeyBits(pub crypto.PublicKey) int {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		return p.N.BitLen()
	case *ecdsa.PublicKey:
		return p.Curve.Params().BitSize
	case ed25519.PublicKey:
		return 256
	}
	return 0
}

// PublicEqual reports whether a and b are the same public key.
func PublicEqual(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && a != nil && e.Equal(b)
}

// ECDSADER turns the r‖s of CKM_ECDSA (PKCS#11 v2.40 §2.3.1: two integers
// of the curve's byte length each) into the DER ECDSA-Sig-Value of RFC
// 5480 §2.2.3 / RFC 3279 §2.2.3 that X.509, CMS and every CSC client expect.
func ECDSADER(pub *ecdsa.PublicKey, rs []byte) ([]byte, error) {
	n := (pub.Curve.Params().BitSize + 7) / 8
	if len(rs) != 2*n {
		return nil, fmt.Errorf("hsm: CKM_ECDSA returned %d bytes, want %d", len(rs), 2*n)
	}
	return asn1.Marshal(struct{ R, S *big.Int }{
		new(big.Int).SetBytes(rs[:n]), new(big.Int).SetBytes(rs[n:]),
	})
}

// NewID returns a fresh CKA_ID.
func NewID() ([]byte, error) {
	id := make([]byte, IDLen)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("hsm: key ID: %w", err)
	}
	return id, nil
}

// Ed25519 (PKCS#11 v3.0 §2.3.6, §2.3.14): the key type and mechanisms
// signd's audit key uses where the token has them. miekg/pkcs11 v1.1.2
// predates v3.0 and names none of them.
const (
	// CKK_EC_EDWARDS is the key type of an Edwards curve key.
	CKKECEdwards = 0x40
	// CKM_EC_EDWARDS_KEY_PAIR_GEN generates one.
	CKMECEdwardsKeyPairGen = 0x1055
	// CKM_EDDSA signs a message (not a digest) with one; without
	// parameters, pure Ed25519 of RFC 8032 §5.1.
	CKMEdDSA = 0x1057
)

// oidEd25519 is id-Ed25519 (RFC 8410 §3): CKA_EC_PARAMS names the curve
// edwards25519 with it, as PKCS#11 v3.0 §2.3.5 allows and SoftHSM2 2.6
// takes (v3.0 also allows the PrintableString "edwards25519"; no token
// signd meets needs it).
var oidEd25519 = asn1.ObjectIdentifier{1, 3, 101, 112}

// EdwardsPublic reads the Ed25519 public key of the key pair with CKA_ID
// id from its public key object: CKA_EC_POINT, a DER OCTET STRING holding
// the 32-byte RFC 8032 encoding (PKCS#11 v3.0 §2.3.6), or the bare 32
// bytes some tokens return. Called from ReadPublic.
func (o Objects) EdwardsPublic(s pkcs11.SessionHandle, id []byte) (crypto.PublicKey, error) {
	hs, err := o.Find(s, KeyTemplate(pkcs11.CKO_PUBLIC_KEY, id), 2)
	if err != nil {
		return nil, err
	}
	if len(hs) != 1 {
		return nil, fmt.Errorf("%w: Ed25519 key %x has %d public key objects, want 1", ckr.ErrKeyPolicy, id, len(hs))
	}
	v, err := o.Attrs(s, hs[0], pkcs11.CKA_EC_POINT)
	if err != nil {
		return nil, err
	}
	point := v[pkcs11.CKA_EC_POINT]
	var raw []byte
	if rest, err := asn1.Unmarshal(point, &raw); err != nil || len(rest) != 0 {
		raw = point
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: Ed25519 key %x with a CKA_EC_POINT of %d bytes", ErrUnusablePublic, id, len(raw))
	}
	return ed25519.PublicKey(bytes.Clone(raw)), nil
}

// ECPublicTemplate is the EC public key template on the curve whose
// CKA_EC_PARAMS are params (CurveParams), less ID and label.
func ECPublicTemplate(params []byte) []*pkcs11.Attribute {
	return publicTemplate(pkcs11.CKK_EC,
		pkcs11.NewAttribute(pkcs11.CKA_DERIVE, false),
		pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, params),
	)
}

// EdwardsPublicTemplate is the Ed25519 public key template, less ID and
// label: CKA_EC_PARAMS names edwards25519 by oidEd25519.
func EdwardsPublicTemplate() []*pkcs11.Attribute {
	params, _ := asn1.Marshal(oidEd25519)
	return publicTemplate(CKKECEdwards, pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, params))
}

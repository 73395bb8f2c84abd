package softhsmtest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/pkcs11"
)

// Freeze is what a token really does with a private key that was asked
// to be frozen: whether a same-value C_SetAttributeValue of CKA_LABEL is
// refused, and which usages beyond signing the key has.
type Freeze struct {
	RelabelRefused bool     // C_SetAttributeValue(CKA_LABEL) failed
	RelabelCode    string   // its return code, "" when it succeeded
	ExtraUsages    []string // usages beyond signing the key has (see KeyFreeze)
}

// KeyFreeze probes the private key labelled keyLabel on t, as someone
// holding the user PIN could, with its own C_Initialize of the module.
// The usages beyond signing it looks for are CKA_DECRYPT, CKA_UNWRAP,
// CKA_DERIVE and CKA_SIGN_RECOVER on an RSA key; on an EC key only
// CKA_DERIVE (ECDH) and CKA_SIGN_RECOVER, since PKCS#11 has no mechanism
// that decrypts or unwraps with an EC key itself (SoftHSM2 leaves
// CKA_DECRYPT and CKA_UNWRAP at its default, true, on EC keys, to no
// effect). Call it only while no hsm.Token of this process has the module
// open (it returns an error if one has):
// call it only while no hsm.Token of this process has the module open
// (it returns an error if one has). The write it tries sets the label the
// key already has, so a token that allows it changes nothing.
func (t *Token) KeyFreeze(keyLabel string) (Freeze, error) {
	ctx := pkcs11.New(t.Module)
	if ctx == nil {
		return Freeze{}, fmt.Errorf("softhsmtest: cannot load the PKCS#11 module %s", t.Module)
	}
	if err := ctx.Initialize(); err != nil {
		return Freeze{}, fmt.Errorf("softhsmtest: C_Initialize: %w (is a Token of this process still open?)", err)
	}
	defer ctx.Finalize()
	slots, err := ctx.GetSlotList(true)
	if err != nil {
		return Freeze{}, fmt.Errorf("softhsmtest: C_GetSlotList: %w", err)
	}
	slot, found := uint(0), false
	for _, s := range slots {
		info, err := ctx.GetTokenInfo(s)
		if err == nil && strings.TrimRight(info.Label, " ") == t.Label {
			slot, found = s, true
			break
		}
	}
	if !found {
		return Freeze{}, fmt.Errorf("softhsmtest: no token %q in %s", t.Label, t.Module)
	}
	s, err := ctx.OpenSession(slot, pkcs11.CKF_SERIAL_SESSION|pkcs11.CKF_RW_SESSION)
	if err != nil {
		return Freeze{}, fmt.Errorf("softhsmtest: C_OpenSession: %w", err)
	}
	defer ctx.CloseSession(s) // the last session: the login ends with it
	if err := ctx.Login(s, pkcs11.CKU_USER, t.PIN); err != nil {
		return Freeze{}, fmt.Errorf("softhsmtest: C_Login: %w", err)
	}
	tmpl := []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PRIVATE_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_LABEL, keyLabel),
	}
	if err := ctx.FindObjectsInit(s, tmpl); err != nil {
		return Freeze{}, fmt.Errorf("softhsmtest: C_FindObjectsInit: %w", err)
	}
	hs, _, err := ctx.FindObjects(s, 2)
	if ferr := ctx.FindObjectsFinal(s); err == nil {
		err = ferr
	}
	if err != nil {
		return Freeze{}, fmt.Errorf("softhsmtest: C_FindObjects: %w", err)
	}
	if len(hs) != 1 {
		return Freeze{}, fmt.Errorf("softhsmtest: %d private keys labelled %q on %q", len(hs), keyLabel, t.Label)
	}
	var f Freeze
	if err := ctx.SetAttributeValue(s, hs[0], []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, keyLabel)}); err != nil {
		var code pkcs11.Error
		if !errors.As(err, &code) {
			return Freeze{}, fmt.Errorf("softhsmtest: C_SetAttributeValue: %w", err)
		}
		f.RelabelRefused, f.RelabelCode = true, fmt.Sprintf("0x%X", uint(code))
	}
	kt, err := ctx.GetAttributeValue(s, hs[0], []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, nil)})
	if err != nil || len(kt) != 1 {
		return Freeze{}, fmt.Errorf("softhsmtest: C_GetAttributeValue(CKA_KEY_TYPE): %v", err)
	}
	ec := bytes.Equal(kt[0].Value, pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_EC).Value)
	// One attribute a call: a token that does not know one of them fails
	// the whole call (CKR_ATTRIBUTE_TYPE_INVALID), and a usage it does
	// not know is not one the key has.
	for _, u := range []struct {
		name string
		typ  uint
		rsa  bool // a usage of RSA keys only
	}{{"CKA_DECRYPT", pkcs11.CKA_DECRYPT, true}, {"CKA_UNWRAP", pkcs11.CKA_UNWRAP, true}, {"CKA_DERIVE", pkcs11.CKA_DERIVE, false}, {"CKA_SIGN_RECOVER", pkcs11.CKA_SIGN_RECOVER, false}} {
		if ec && u.rsa {
			continue
		}
		v, err := ctx.GetAttributeValue(s, hs[0], []*pkcs11.Attribute{pkcs11.NewAttribute(u.typ, nil)})
		var code pkcs11.Error
		if errors.As(err, &code) && code == pkcs11.CKR_ATTRIBUTE_TYPE_INVALID {
			continue
		}
		if err != nil {
			return Freeze{}, fmt.Errorf("softhsmtest: C_GetAttributeValue(%s): %w", u.name, err)
		}
		if len(v) == 1 && len(v[0].Value) == 1 && v[0].Value[0] != 0 {
			f.ExtraUsages = append(f.ExtraUsages, u.name)
		}
	}
	return f, nil
}

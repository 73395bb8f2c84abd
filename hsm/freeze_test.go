package hsm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/keyobj"
)

// acceptLabel is a token that answers every C_SetAttributeValue with
// CKR_OK and changes nothing, as tpm2-pkcs11 1.9 accepts a CKA_LABEL write
// on a private key whose CKA_MODIFIABLE reads false.
type acceptLabel struct{ Ctx }

func (acceptLabel) SetAttributeValue(pkcs11.SessionHandle, pkcs11.ObjectHandle, []*pkcs11.Attribute) error {
	return nil
}

// TestFreezeVerified: a key is frozen only if the token refuses a write
// (a same-value C_SetAttributeValue of CKA_LABEL), not because
// CKA_MODIFIABLE reads false. SoftHSM2 refuses it: no defect. A token that
// accepts it is reported (KeyInfo.Defects, a warning naming the token and
// the key), and with RequireImmutableKeys the key is refused and
// destroyed.
func TestFreezeVerified(t *testing.T) {
	ctx := context.Background()
	t.Run("SoftHSM2 keeps it", func(t *testing.T) {
		simulatedOnSoftHSM2(t) // TestExternalFreeze says what other tokens keep
		cfg, logs := loggedConfig(mainTok)
		cfg.RequireImmutableKeys = true
		tok := openTest(t, cfg, options{})
		info, err := tok.GenerateRSA(ctx, "frozen-softhsm2", 2048)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tok.DestroyKey(ctx, info.ID) })
		if len(info.Defects) != 0 || logs.count("does not freeze") != 0 {
			t.Fatalf("defects %q on SoftHSM2; logs:\n%s", info.Defects, logs.String())
		}
	})
	t.Run("accepted write is reported", func(t *testing.T) {
		cfg, logs := loggedConfig(mainTok)
		cfg.Wrap = func(c Ctx) Ctx { return acceptLabel{c} }
		tok := openTest(t, cfg, options{})
		info, err := tok.GenerateRSA(ctx, "label-writable", 2048)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tok.DestroyKey(ctx, info.ID) })
		if !hasDefect(info.Defects, "CKA_LABEL can be changed") {
			t.Fatalf("defects %q, want the writable label", info.Defects)
		}
		if logs.count("does not freeze this key") == 0 || logs.count(`label=label-writable id=`) != 2 || logs.count(`token=`+mainTok.Label) == 0 {
			t.Errorf("no warning naming the token and the key:\n%s", logs.String())
		}
		keys, err := tok.CheckKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, k := range keys {
			if k.Label == "label-writable" {
				found = hasDefect(k.Defects, "CKA_LABEL can be changed")
			}
		}
		if !found {
			t.Errorf("CheckKeys does not report the key's defect: %+v", keys)
		}
		if logs.count("label=label-writable id=") != 3 { // generated, warned, warned again
			t.Errorf("CheckKeys did not warn again:\n%s", logs.String())
		}
	})
	t.Run("required", func(t *testing.T) {
		cfg := config(mainTok)
		cfg.Wrap = func(c Ctx) Ctx { return acceptLabel{c} }
		cfg.RequireImmutableKeys = true
		tok := openTest(t, cfg, options{})
		info, err := tok.GenerateRSA(ctx, "label-writable-required", 2048)
		if err == nil {
			_ = tok.DestroyKey(ctx, info.ID)
			t.Fatal("a key the token does not freeze was kept")
		}
		if !errors.Is(err, ErrKeyNotFrozen) || !errors.Is(err, ErrKeyPolicy) || !strings.Contains(err.Error(), "CKA_LABEL can be changed") {
			t.Fatalf("error %v, want ErrKeyNotFrozen naming the defect", err)
		}
		if n := countObjects(t, shared, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, "label-writable-required")}); n != 0 {
			t.Errorf("%d objects left behind", n)
		}
	})
}

// hasDefect reports whether one of defects contains s.
func hasDefect(defects []string, s string) bool {
	for _, d := range defects {
		if strings.Contains(d, s) {
			return true
		}
	}
	return false
}

// TestExternalFreeze: on the external token, what signd reports of a new
// key's freeze is what the token does: the label write it accepts and
// the usages beyond signing it gives.
func TestExternalFreeze(t *testing.T) {
	cfg := externalConfig(t)
	tok := openTest(t, cfg, options{})
	ctx := context.Background()
	info, err := tok.GenerateRSA(ctx, "ext-freeze-"+strings.ToLower(t.Name()[:4]), 2048)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tok.DestroyKey(ctx, info.ID) })
	var writable bool
	err = tok.run(ctx, "try a write", func(s pkcs11.SessionHandle) error {
		h, err := tok.findKey(s, pkcs11.CKO_PRIVATE_KEY, info.ID)
		if err != nil {
			return err
		}
		writable = tok.lib.SetAttributeValue(s, h, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, info.Label)}) == nil
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := rawAttrs(tok, pkcs11.CKO_PRIVATE_KEY, info.ID, pkcs11.CKA_DECRYPT, pkcs11.CKA_UNWRAP, pkcs11.CKA_DERIVE)
	if err != nil {
		t.Fatal(err)
	}
	has := func(s string) bool {
		for _, d := range info.Defects {
			if strings.Contains(d, s) {
				return true
			}
		}
		return false
	}
	if writable != has("CKA_LABEL") {
		t.Errorf("label write accepted: %v; defects %q", writable, info.Defects)
	}
	for typ, name := range map[uint]string{pkcs11.CKA_DECRYPT: "decrypt", pkcs11.CKA_UNWRAP: "unwrap", pkcs11.CKA_DERIVE: "derive"} {
		if keyobj.AttrBool(v[typ]) != has(name) {
			t.Errorf("%s: token says %v; defects %q", name, keyobj.AttrBool(v[typ]), info.Defects)
		}
	}
	t.Logf("token %q: defects %q", cfg.TokenLabel, info.Defects)

	cfg.RequireImmutableKeys = true
	strict := openTest(t, cfg, options{})
	k, err := strict.GenerateRSA(ctx, "ext-freeze-required", 2048)
	switch {
	case len(info.Defects) == 0 && err != nil:
		t.Fatalf("a token that freezes its keys: %v", err)
	case len(info.Defects) > 0 && !errors.Is(err, ErrKeyNotFrozen):
		if err == nil {
			_ = strict.DestroyKey(ctx, k.ID)
		}
		t.Fatalf("a token that does not freeze its keys: %v, want ErrKeyNotFrozen", err)
	case err == nil:
		_ = strict.DestroyKey(ctx, k.ID)
	}
}

package hsm

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
)

// A generated key pair is frozen (PKCS#11 v2.40 §4.4: CKA_MODIFIABLE,
// CKA_COPYABLE): nobody holding the user PIN can relabel it, re-enable a
// usage the template switched off, or copy it into an object with other
// attributes. Reading the attributes back proves the token stored what
// was asked; the refused C_SetAttributeValue and C_CopyObject prove the
// token enforces it.
func TestGeneratedKeyIsImmutable(t *testing.T) {
	ctx := context.Background()
	info, err := shared.GenerateRSA(ctx, "immutable-2048", 2048)
	if err != nil {
		t.Fatal(err)
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			_ = shared.DestroyKey(ctx, info.ID)
		}
	})
	if len(info.Defects) > 0 {
		// signd found the token does not freeze keys, and said so
		// (TestFreezeVerified, TestTokenJourney check the reporting).
		lacks(t, "keys are not frozen (signd reports %q)", info.Defects)
	}

	priv, err := rawAttrs(shared, pkcs11.CKO_PRIVATE_KEY, info.ID,
		pkcs11.CKA_SENSITIVE, pkcs11.CKA_EXTRACTABLE, pkcs11.CKA_MODIFIABLE, pkcs11.CKA_COPYABLE)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint]bool{
		pkcs11.CKA_SENSITIVE: true, pkcs11.CKA_EXTRACTABLE: false,
		pkcs11.CKA_MODIFIABLE: false, pkcs11.CKA_COPYABLE: false,
	}
	if _, ok := priv[pkcs11.CKA_COPYABLE]; !ok && mainTok.External {
		// CKA_COPYABLE is PKCS#11 v2.40; a Cryptoki 2.20 token
		// (opencryptoki 3.8) has no such attribute. C_CopyObject below
		// still has to be refused.
		delete(want, pkcs11.CKA_COPYABLE)
	}
	checkBools(t, "private", priv, want)
	pub, err := rawAttrs(shared, pkcs11.CKO_PUBLIC_KEY, info.ID, pkcs11.CKA_MODIFIABLE)
	if err != nil {
		t.Fatal(err)
	}
	checkBools(t, "public", pub, map[uint]bool{pkcs11.CKA_MODIFIABLE: false})

	// miekg/pkcs11 has no name for CKR_ACTION_PROHIBITED (0x1B): compare
	// the numbers.
	refused := []uint{pkcs11.CKR_ATTRIBUTE_READ_ONLY, pkcs11.CKR_ACTION_PROHIBITED}
	edits := []struct {
		name  string
		class uint
		attr  *pkcs11.Attribute
	}{
		{"relabel private", pkcs11.CKO_PRIVATE_KEY, pkcs11.NewAttribute(pkcs11.CKA_LABEL, "hijacked")},
		{"new ID on private", pkcs11.CKO_PRIVATE_KEY, pkcs11.NewAttribute(pkcs11.CKA_ID, []byte("hijacked"))},
		{"enable decrypt on private", pkcs11.CKO_PRIVATE_KEY, pkcs11.NewAttribute(pkcs11.CKA_DECRYPT, true)},
		{"enable unwrap on private", pkcs11.CKO_PRIVATE_KEY, pkcs11.NewAttribute(pkcs11.CKA_UNWRAP, true)},
		{"relabel public", pkcs11.CKO_PUBLIC_KEY, pkcs11.NewAttribute(pkcs11.CKA_LABEL, "hijacked")},
		{"enable encrypt on public", pkcs11.CKO_PUBLIC_KEY, pkcs11.NewAttribute(pkcs11.CKA_ENCRYPT, true)},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			err := onKey(t, e.class, info.ID, func(lib *pkcs11.Ctx, s pkcs11.SessionHandle, h pkcs11.ObjectHandle) error {
				return lib.SetAttributeValue(s, h, []*pkcs11.Attribute{e.attr})
			})
			if err == nil || !slices.Contains(refused, ckr.RV(err)) {
				t.Errorf("C_SetAttributeValue: %v, want CKR_ATTRIBUTE_READ_ONLY or CKR_ACTION_PROHIBITED", err)
			}
		})
	}
	t.Run("copy private", func(t *testing.T) {
		var copied pkcs11.ObjectHandle
		err := onKey(t, pkcs11.CKO_PRIVATE_KEY, info.ID, func(lib *pkcs11.Ctx, s pkcs11.SessionHandle, h pkcs11.ObjectHandle) error {
			var err error
			copied, err = lib.CopyObject(s, h, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, "copy")})
			if err == nil {
				_ = lib.DestroyObject(s, copied)
			}
			return err
		})
		switch {
		case err == nil && !hasDefect(info.Defects, "can be copied"):
			// A token that predates CKA_COPYABLE (opencryptoki 3.8) may copy;
			// then signd must have said so.
			t.Errorf("C_CopyObject succeeded and the key's defects %q do not say so", info.Defects)
		case err != nil && ckr.RV(err) != pkcs11.CKR_ACTION_PROHIBITED:
			t.Errorf("C_CopyObject: %v, want CKR_ACTION_PROHIBITED (0x1b)", err)
		}
	})

	// Nothing changed, the key still signs, and a frozen key can still be
	// destroyed (an enrollment is undone with DestroyKey).
	after, err := rawAttrs(shared, pkcs11.CKO_PRIVATE_KEY, info.ID, pkcs11.CKA_LABEL, pkcs11.CKA_DECRYPT)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(after[pkcs11.CKA_LABEL]); got != "immutable-2048" || keyobj.AttrBool(after[pkcs11.CKA_DECRYPT]) {
		t.Errorf("after the refused edits: label %q, CKA_DECRYPT %v", got, keyobj.AttrBool(after[pkcs11.CKA_DECRYPT]))
	}
	signAndVerify(t, shared, info.ID, info.Public)
	if err := shared.DestroyKey(ctx, info.ID); err != nil {
		t.Fatalf("DestroyKey of a frozen key: %v", err)
	}
	destroyed = true
}

// onKey runs fn on the object of class with CKA_ID id, with the raw
// module (the Token's narrow interface has no setter, on purpose).
func onKey(t *testing.T, class uint, id []byte, fn func(*pkcs11.Ctx, pkcs11.SessionHandle, pkcs11.ObjectHandle) error) error {
	t.Helper()
	lib, ok := shared.lib.(*pkcs11.Ctx)
	if !ok {
		t.Fatalf("shared token's module is a %T, not *pkcs11.Ctx", shared.lib)
	}
	return shared.run(context.Background(), "edit key", func(s pkcs11.SessionHandle) error {
		h, err := shared.findKey(s, class, id)
		if err != nil {
			return err
		}
		return ckr.Wrap("test call", fn(lib, s, h))
	})
}

// ignoreFreeze is a token that silently drops CKA_MODIFIABLE and
// CKA_COPYABLE from key templates, as a module predating PKCS#11 v2.40
// might.
type ignoreFreeze struct{ Ctx }

func (f ignoreFreeze) GenerateKeyPair(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, public, private []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	drop := func(tmpl []*pkcs11.Attribute) []*pkcs11.Attribute {
		return slices.DeleteFunc(slices.Clone(tmpl), func(a *pkcs11.Attribute) bool {
			return a.Type == pkcs11.CKA_MODIFIABLE || a.Type == pkcs11.CKA_COPYABLE
		})
	}
	return f.Ctx.GenerateKeyPair(sh, m, drop(public), drop(private))
}

func TestGenerateRSARefusesUnfrozenKey(t *testing.T) {
	cfg := config(mainTok)
	cfg.Wrap = func(c Ctx) Ctx { return ignoreFreeze{c} }
	tok := openTest(t, cfg, options{})
	info, err := tok.GenerateRSA(context.Background(), "unfrozen-2048", 2048)
	if err == nil {
		_ = tok.DestroyKey(context.Background(), info.ID)
		t.Fatal("GenerateRSA kept a key the token left modifiable and copyable")
	}
	if !errors.Is(err, ErrKeyPolicy) {
		t.Errorf("error %v, want ErrKeyPolicy", err)
	}
	if n := countObjects(t, shared, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, "unfrozen-2048")}); n != 0 {
		t.Errorf("%d objects left behind", n)
	}
}

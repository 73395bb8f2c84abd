package hsm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/hsmtest"
)

// noRelabelledCopy is a token that refuses a copy whose template changes
// CKA_ID (CKR_ATTRIBUTE_READ_ONLY) but copies a key as it is, as a token
// may that lets a copy change only what "can ordinarily be modified"
// (PKCS#11 v2.40 §5.7 C_CopyObject) of a key whose CKA_MODIFIABLE is
// false.
type noRelabelledCopy struct{ Ctx }

func (c noRelabelledCopy) CopyObject(sh pkcs11.SessionHandle, o pkcs11.ObjectHandle, temp []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	for _, a := range temp {
		if a.Type == pkcs11.CKA_ID {
			return 0, pkcs11.Error(pkcs11.CKR_ATTRIBUTE_READ_ONLY)
		}
	}
	return c.Ctx.CopyObject(sh, o, temp)
}

// objectsOf counts the objects, token or session, matching tmpl, straight
// from the module (no CKA_TOKEN in the template: session objects count).
func objectsOf(tok *Token, tmpl ...*pkcs11.Attribute) (int, error) {
	var n int
	err := tok.run(context.Background(), "count objects", func(s pkcs11.SessionHandle) error {
		hs, err := tok.obj.FindAll(s, tmpl)
		n = len(hs)
		return err
	})
	return n, err
}

// copyableKey imports a key on faultTok without CKA_COPYABLE false, so
// that SoftHSM2 copies it, as it does keys made elsewhere, and returns its
// ID and a Token that looks it up. The Token that tests its freeze must
// not see CKA_COPYABLE true (like220: opencryptoki 3.8 does not know the
// attribute), or it reports the defect without copying.
func copyableKey(t *testing.T, label string) ([]byte, *Token) {
	t.Helper()
	cfg := config(faultTok)
	cfg.AllowImportedKeys = true
	looker := openTest(t, cfg, options{})
	id := randomID(t)
	importRSA(t, looker, label, id, fixtureKey)
	t.Cleanup(func() { _ = looker.DestroyKey(context.Background(), id) })
	return id, looker
}

// TestFreezeProbeCopyIsNoKey: the copy CheckKeys makes to test a key's
// freeze is a session object, visible to every session of the
// application while it exists. Lookups of the key by its CKA_ID, run in
// parallel goroutines while CheckKeys runs again and again, never meet it
// (no ErrAmbiguousKey): finds wait while a copy is made (SoftHSM2 gives
// the copy its template only after copying every attribute), the copy
// has an ID of its own, and lookups match token objects only, which also
// covers a token that refuses the new ID and copies the key as it is. Afterwards nothing
// but the key pair carries the key's ID, and no session object is left.
// The key reads CKA_MODIFIABLE true, so its label is not written: the
// defect is the token's own word.
func TestFreezeProbeCopyIsNoKey(t *testing.T) {
	for _, tt := range []struct {
		name string
		wrap func(Ctx) Ctx
	}{
		{"relabelled copy", func(c Ctx) Ctx { return &like220{Ctx: c} }},
		{"token refuses to relabel the copy", func(c Ctx) Ctx { return noRelabelledCopy{&like220{Ctx: c}} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			id, looker := copyableKey(t, "copyable-imported")
			cfg := config(faultTok)
			cfg.AllowImportedKeys = true
			var fake *hsmtest.Faults
			cfg.Wrap = func(real Ctx) Ctx { fake = hsmtest.Wrap(tt.wrap(real)); return fake }
			prober := openTest(t, cfg, options{})

			lookup := func() error {
				looker.forget(id) // a find every time, not the cached handle
				return looker.CheckKey(ctx, id)
			}
			var stop atomic.Bool
			var ambiguous atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for !stop.Load() {
						if err := lookup(); errors.Is(err, ErrAmbiguousKey) {
							ambiguous.Add(1)
						} else if err != nil {
							t.Errorf("lookup: %v", err)
							return
						}
					}
				})
			}
			var copied, relabelled bool
			for range 20 {
				keys, err := prober.CheckKeys(ctx)
				if err != nil {
					t.Error(err)
					break
				}
				for _, k := range keys {
					if string(k.ID) == string(id) {
						copied = hasDefect(k.Defects, "can be copied (C_CopyObject accepted)")
						relabelled = hasDefect(k.Defects, "CKA_LABEL can be changed (CKA_MODIFIABLE true)")
					}
				}
			}
			stop.Store(true)
			wg.Wait()

			if !copied {
				lacks(t, "the token refuses to copy a key imported without CKA_COPYABLE false: nothing to collide with")
			}
			// The key says CKA_MODIFIABLE true: the defect is its word, and
			// nothing is written (SoftHSM2's rewrite of the object's file
			// makes parallel finds miss the key).
			if !relabelled {
				t.Error("CKA_MODIFIABLE true: the defect does not say so")
			}
			if n := ambiguous.Load(); n > 0 {
				t.Errorf("%d parallel lookups met the freeze test's copy (ErrAmbiguousKey)", n)
			}
			if n, err := objectsOf(looker, pkcs11.NewAttribute(pkcs11.CKA_ID, id)); err != nil || n != 2 {
				t.Errorf("%d objects carry the key's CKA_ID (%v), want 2 (the key pair)", n, err)
			}
			if n, err := objectsOf(looker, pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false)); err != nil || n != 0 {
				t.Errorf("%d session objects left (%v)", n, err)
			}
		})
	}
}

// TestFreezeProbeCopyNotDestroyed: when the freeze test's copy cannot be
// destroyed, the session that made it is closed, which destroys its
// session objects (PKCS#11 v2.40 §5.6 C_CloseSession): no copy is left,
// and CheckKeys says why it failed.
func TestFreezeProbeCopyNotDestroyed(t *testing.T) {
	ctx := context.Background()
	id, looker := copyableKey(t, "copyable-undestroyed")
	cfg := config(faultTok)
	cfg.AllowImportedKeys = true
	cfg.MaxSessions = 1
	var fake *hsmtest.Faults
	cfg.Wrap = func(real Ctx) Ctx { fake = hsmtest.Wrap(&like220{Ctx: real}); return fake }
	prober := openTest(t, cfg, options{})
	if err := prober.CheckKey(ctx, id); err != nil {
		t.Fatal(err)
	}
	before := pooledSession(t, prober)

	fake.FailOnce("DestroyObject", pkcs11.CKR_ACTION_PROHIBITED)
	_, err := prober.CheckKeys(ctx)
	if fake.Calls("DestroyObject") == 0 {
		lacks(t, "the token refuses to copy a key imported without CKA_COPYABLE false")
	}
	if ckr.RV(err) != pkcs11.CKR_ACTION_PROHIBITED {
		t.Fatalf("CheckKeys: %v, want the C_DestroyObject error", err)
	}
	if n, err := objectsOf(looker, pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false)); err != nil || n != 0 {
		t.Fatalf("%d session objects left (%v): the copy outlived the failed destroy", n, err)
	}
	if n, err := objectsOf(looker, pkcs11.NewAttribute(pkcs11.CKA_ID, id)); err != nil || n != 2 {
		t.Errorf("%d objects carry the key's CKA_ID (%v), want 2 (the key pair)", n, err)
	}
	if after := pooledSession(t, prober); after.H != 0 && after.Serial == before.Serial {
		t.Error("the session holding the copy went back to the pool")
	}
	if _, err := prober.CheckKeys(ctx); err != nil {
		t.Fatalf("CheckKeys after: %v", err)
	}
}

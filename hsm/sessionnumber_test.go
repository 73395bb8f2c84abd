package hsm

import (
	"context"
	"crypto"
	"sync"
	"testing"
	"time"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/hsmtest"
	"github.com/signd/signd/hsm/module"
)

// openPause is a module wrapper that, once armed, calls after between a
// C_OpenSession's return and the Token recording the number: the moment
// another goroutine may still hold the number's previous, dead session.
type openPause struct {
	Ctx
	mu    sync.Mutex
	after func(h pkcs11.SessionHandle)
}

func (o *openPause) OpenSession(slot, flags uint) (pkcs11.SessionHandle, error) {
	h, err := o.Ctx.OpenSession(slot, flags)
	o.mu.Lock()
	after := o.after
	o.after = nil
	o.mu.Unlock()
	if err == nil && after != nil {
		after(h)
	}
	return h, err
}

// TestDeadNumberNotClosedUnderNewSession: a pool session is closed
// behind the Token's back (as a device reset or C_CloseAllSessions
// does); tpm2-pkcs11 and opencryptoki give its number to the next
// C_OpenSession. While a goroutine opens that session, another discards
// the dead one that carried the number. The discard must not close the
// new session: C_OpenSession and the recording of its number are one
// step against the check and the C_CloseSession of a discard.
func TestDeadNumberNotClosedUnderNewSession(t *testing.T) {
	key := faultKey(t)
	cfg := config(faultTok)
	cfg.MaxSessions = 2
	var fake *hsmtest.Faults
	pause := &openPause{}
	cfg.Wrap = func(real Ctx) Ctx {
		fake = hsmtest.Wrap(real)
		fake.ReuseSessionNumbers()
		pause.Ctx = fake
		return pause
	}
	tok := openTest(t, cfg, options{})
	signBoth(t, tok, key)

	tok.mu.Lock()
	pooled := tok.pool.Take()
	tok.pool.Put(pooled)
	tok.mu.Unlock()
	var dead module.Session
	for _, s := range pooled {
		if s.H != 0 {
			dead = s
			break
		}
	}
	if dead.H == 0 {
		t.Fatalf("no pool session to close: %v", pooled)
	}
	if err := fake.CloseSession(dead.H); err != nil {
		t.Fatalf("close %d behind the Token's back: %v", dead.H, err)
	}

	discarded := make(chan struct{})
	pause.mu.Lock()
	pause.after = func(h pkcs11.SessionHandle) {
		if h != dead.H {
			t.Errorf("the new session got number %d, not the freed %d: the module wrapper does not reuse numbers", h, dead.H)
		}
		go func() {
			defer close(discarded)
			tok.mod.Mu.RLock()
			defer tok.mod.Mu.RUnlock()
			_ = tok.closeSession(dead) // what a signer does with the dead session it held
		}()
		// Give the discard every chance to run first (it must wait).
		select {
		case <-discarded:
		case <-time.After(200 * time.Millisecond):
		}
	}
	pause.mu.Unlock()

	tok.mod.Mu.RLock()
	s, err := tok.openSession()
	tok.mod.Mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	<-discarded
	if _, err := fake.GetSessionInfo(s.H); err != nil {
		t.Fatalf("the session just opened (number %d) was closed by the discard of the dead session that carried its number: %v", s.H, err)
	}
	tok.mod.Mu.RLock()
	_ = tok.closeSession(s)
	tok.mod.Mu.RUnlock()
}

// TestClosedSessionForgottenNotClosed: an operation that learns from the
// module that its session is closed (CKR_SESSION_HANDLE_INVALID) drops it
// without C_CloseSession: the number is free in the module, and closing
// it would close whichever session was given it meanwhile. The signature
// still succeeds on a fresh session.
func TestClosedSessionForgottenNotClosed(t *testing.T) {
	key := faultKey(t)
	cfg := config(faultTok)
	cfg.MaxSessions = 1
	var fake *hsmtest.Faults
	cfg.Wrap = func(real Ctx) Ctx {
		fake = hsmtest.Wrap(real)
		return fake
	}
	tok := openTest(t, cfg, options{})
	signAndVerify(t, tok, key.ID, key.Public)
	fake.FailOnce("SignInit", pkcs11.CKR_SESSION_HANDLE_INVALID)
	closes := fake.Calls("CloseSession")
	d := digestOf(crypto.SHA256, []byte("closed session"))
	if _, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d); err != nil {
		t.Fatalf("sign after a closed session: %v", err)
	}
	if n := fake.Calls("CloseSession") - closes; n != 0 {
		t.Errorf("C_CloseSession called %d times on a session the module reported closed", n)
	}
}

package hsm

import (
	"context"
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/hsmtest"
)

// The recovery tests use their own token, faultTok, because they close
// sessions behind the Token's back and CloseAllSessions hits every Token
// on the slot.

var faultKeyOnce = sync.OnceValues(func() (*KeyInfo, error) {
	tok, err := Open(config(faultTok))
	if err != nil {
		return nil, err
	}
	defer tok.Close()
	return tok.GenerateRSA(context.Background(), "fault-2048", 2048)
})

// faultKey is an RSA-2048 key generated on faultTok.
func faultKey(t *testing.T) *KeyInfo {
	t.Helper()
	k, err := faultKeyOnce()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// openTwoSessions opens a Token of cfg with a pool of two sessions.
func openTwoSessions(t *testing.T, cfg Config) *Token {
	t.Helper()
	cfg.MaxSessions = 2
	return openTest(t, cfg, options{})
}

// rawCtx is the real module, for acting behind a Token's back.
func rawCtx(t *testing.T, tok *Token) *pkcs11.Ctx {
	t.Helper()
	c, ok := tok.mod.Lib.(*pkcs11.Ctx)
	if !ok {
		t.Fatalf("module is a %T", tok.mod.Lib)
	}
	return c
}

func TestRecoverClosedPoolSessions(t *testing.T) {
	key := faultKey(t)
	var logs logBuffer
	var metrics recordingMetrics
	cfg := config(faultTok)
	cfg.MaxSessions = 2
	cfg.Logger = logs.logger()
	cfg.Metrics = &metrics
	tok := openTest(t, cfg, options{})
	signAndVerify(t, tok, key.ID, key.Public)
	signAndVerify(t, tok, key.ID, key.Public)
	if n := countOpen(tok); n != 2 {
		t.Fatalf("%d pool sessions open, want 2", n)
	}

	// Close every pool session behind the Token's back.
	raw := rawCtx(t, tok)
	tok.mu.Lock()
	handles := tok.pool.Take()
	for _, s := range handles {
		if err := raw.CloseSession(s.H); err != nil {
			t.Errorf("close session %d: %v", s.H, err)
		}
	}
	tok.pool.Put(handles)
	gen := tok.gen.Load()
	tok.mu.Unlock()

	for range 4 {
		signAndVerify(t, tok, key.ID, key.Public)
	}
	if tok.gen.Load() != gen {
		t.Errorf("generation changed: replacing sessions needs no re-login")
	}
	if metrics.code("CKR_SESSION_HANDLE_INVALID") == 0 {
		t.Errorf("no CKR_SESSION_HANDLE_INVALID observed; logs:\n%s", logs.String())
	}
	if logs.count("CKR_SESSION_HANDLE_INVALID") == 0 {
		t.Errorf("return code not logged by name:\n%s", logs.String())
	}
}

func TestRecoverClosedPersistentSession(t *testing.T) {
	key := faultKey(t)
	tok := openTwoSessions(t, config(faultTok))
	signAndVerify(t, tok, key.ID, key.Public)
	raw := rawCtx(t, tok)

	tok.mu.RLock()
	old := tok.persistent
	tok.mu.RUnlock()
	if err := raw.CloseSession(old.H); err != nil {
		t.Fatal(err)
	}
	// The pool sessions keep login and handles alive: signing works.
	signAndVerify(t, tok, key.ID, key.Public)
	// Ping notices and reopens the persistent session. Its number may be
	// the old one again (opencryptoki and tpm2-pkcs11 reuse numbers):
	// the serial of its C_OpenSession tells.
	if err := tok.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	tok.mu.RLock()
	now := tok.persistent
	tok.mu.RUnlock()
	if now.Serial == old.Serial {
		t.Fatal("persistent module.Session not replaced")
	}
	checkLoggedIn(t, raw, now.H)
	signAndVerify(t, tok, key.ID, key.Public)
}

// TestRecoverReusedSessionNumbers: on a module that gives a closed
// session's number to the next session opened (opencryptoki,
// tpm2-pkcs11; simulated here over SoftHSM2), a number that answers
// C_GetSessionInfo is not proof that the session behind it is still the
// one the Token opened. Sessions closed behind the Token's back come back
// as other sessions; the persistent session is never lent out, nothing is
// closed that is not the Token's own, and signing and Ping keep working.
func TestRecoverReusedSessionNumbers(t *testing.T) {
	key := faultKey(t)
	steps := []struct {
		name  string
		close func(tok *Token) []pkcs11.SessionHandle // sessions to close behind the Token's back
	}{
		{"persistent and one pool session", func(tok *Token) []pkcs11.SessionHandle {
			hs := poolHandles(tok)
			return []pkcs11.SessionHandle{tok.persistent.H, hs[0]}
		}},
		{"every session", func(tok *Token) []pkcs11.SessionHandle {
			return append(poolHandles(tok), tok.persistent.H)
		}},
		{"the pool", func(tok *Token) []pkcs11.SessionHandle { return poolHandles(tok) }},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			cfg := config(faultTok)
			cfg.MaxSessions = 2
			var fake *hsmtest.Faults
			cfg.Wrap = func(real Ctx) Ctx {
				fake = hsmtest.Wrap(real)
				fake.ReuseSessionNumbers()
				return fake
			}
			tok := openTest(t, cfg, options{})
			signBoth(t, tok, key)
			tok.mu.Lock()
			closed := step.close(tok)
			tok.mu.Unlock()
			for _, h := range closed {
				if err := fake.CloseSession(h); err != nil {
					t.Fatalf("close %d behind the Token's back: %v", h, err)
				}
			}
			for range 3 {
				signBoth(t, tok, key)
				if err := tok.Ping(context.Background()); err != nil {
					t.Fatalf("Ping: %v", err)
				}
				tok.mu.Lock()
				p, pooled := tok.persistent, tok.pool.Take()
				tok.pool.Put(pooled)
				tok.mu.Unlock()
				for _, s := range pooled {
					if s.H != 0 && s.H == p.H {
						t.Fatalf("the persistent module.Session %d is lent out as a pool session (pool %v)", p.H, pooled)
					}
				}
				info, err := fake.GetSessionInfo(p.H)
				if err != nil || info.State != pkcs11.CKS_RW_USER_FUNCTIONS {
					t.Fatalf("persistent module.Session %d: %+v, %v", p.H, info, err)
				}
			}
		})
	}
}

// signBoth signs twice at once, so that both sessions of a two-session
// pool are in use.
func signBoth(t *testing.T, tok *Token, key *KeyInfo) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			d := digestOf(crypto.SHA256, fmt.Appendf(nil, "%s %d", t.Name(), i))
			sig, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d)
			if err == nil {
				err = rsa.VerifyPKCS1v15(key.Public.(*rsa.PublicKey), crypto.SHA256, d, sig)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// poolHandles returns the numbers of the pool's open sessions. The caller
// holds tok.mu.
func poolHandles(tok *Token) []pkcs11.SessionHandle {
	pooled := tok.pool.Take()
	tok.pool.Put(pooled)
	var hs []pkcs11.SessionHandle
	for _, s := range pooled {
		if s.H != 0 {
			hs = append(hs, s.H)
		}
	}
	return hs
}

func TestRecoverCloseAllSessions(t *testing.T) {
	key := faultKey(t)
	cfg, logs := loggedConfig(faultTok)
	tok := openTwoSessions(t, cfg)
	signAndVerify(t, tok, key.ID, key.Public)
	signAndVerify(t, tok, key.ID, key.Public)
	raw := rawCtx(t, tok)

	tok.mu.RLock()
	slot, gen := tok.slot, tok.gen.Load()
	tok.mu.RUnlock()
	// Every session of the application on the slot goes, and with the
	// last one, on SoftHSM2, the login and every object handle
	// (tpm2-pkcs11 keeps both: only the sessions are replaced there).
	if err := raw.CloseAllSessions(slot); err != nil {
		t.Fatal(err)
	}
	signAndVerify(t, tok, key.ID, key.Public)
	lostLogin := regexp.MustCompile(`CKR_(OBJECT_HANDLE_INVALID|KEY_HANDLE_INVALID|USER_NOT_LOGGED_IN)`).MatchString(logs.String())
	if softHSM2 := tok.Capabilities().Manufacturer == "SoftHSM project"; softHSM2 && !lostLogin {
		t.Errorf("no lost-login error logged:\n%s", logs.String())
	}
	if lostLogin && tok.gen.Load() == gen {
		t.Error("generation not bumped after a lost login: handles were not looked up again")
	}
	if err := tok.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	tok.mu.RLock()
	checkLoggedIn(t, raw, tok.persistent.H)
	tok.mu.RUnlock()
	t.Logf("recovery log:\n%s", logs.String())
}

// TestRecoverCloseAllSessionsConcurrent: eight signers find their
// sessions, login and handles gone at once; every signature succeeds.
//
// The sessions are closed while the Token is quiescent (write lock held):
// SoftHSM2 2.6.1 segfaults in C_Sign when C_CloseAllSessions runs on
// another thread during the call (use after free). The package itself
// never closes a session another goroutine is using.
func TestRecoverCloseAllSessionsConcurrent(t *testing.T) {
	key := faultKey(t)
	tok := openTwoSessions(t, config(faultTok))
	raw := rawCtx(t, tok)
	for round := range 3 {
		var wg sync.WaitGroup
		var signed atomic.Int32
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				for range 5 {
					d := digestOf(crypto.SHA256, []byte("concurrent recovery"))
					if _, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d); err != nil {
						t.Errorf("round %d: %v", round, err)
					}
					signed.Add(1)
				}
			})
		}
		tok.mu.Lock()
		close(start) // the signers queue behind the write lock
		if err := raw.CloseAllSessions(tok.slot); err != nil {
			t.Error(err)
		}
		tok.mu.Unlock()
		wg.Wait()
		if signed.Load() != 40 {
			t.Fatalf("round %d: %d signatures", round, signed.Load())
		}
	}
}

func checkLoggedIn(t *testing.T, raw *pkcs11.Ctx, s pkcs11.SessionHandle) {
	t.Helper()
	info, err := raw.GetSessionInfo(s)
	if err != nil {
		t.Fatalf("persistent module.Session: %v", err)
	}
	if info.State != pkcs11.CKS_RW_USER_FUNCTIONS {
		t.Fatalf("persistent module.Session in state %d, want CKS_RW_USER_FUNCTIONS", info.State)
	}
}

// openFaultSigned is openFault after a first signature with faultKey,
// which it returns.
func openFaultSigned(t *testing.T, cfg Config) (*KeyInfo, *Token, *hsmtest.Faults) {
	t.Helper()
	key := faultKey(t)
	tok, fake := openFault(t, cfg)
	signAndVerify(t, tok, key.ID, key.Public)
	return key, tok, fake
}

// openFault opens a Token on faultTok whose module calls go through a
// fault injector, with a fast reconnect backoff.
func openFault(t *testing.T, cfg Config) (*Token, *hsmtest.Faults) {
	t.Helper()
	var fake *hsmtest.Faults
	cfg.Wrap = func(real Ctx) Ctx { fake = hsmtest.Wrap(real); return fake }
	tok := openTest(t, cfg, options{
		backoffMin: 5 * time.Millisecond,
		backoffMax: 40 * time.Millisecond,
	})
	return tok, fake
}

// TestRecoverInjected injects one return code into one call of a
// signature.
func TestRecoverInjected(t *testing.T) {
	key := faultKey(t)
	tests := []struct {
		method string
		code   uint
		ok     bool
		more   map[string]int // calls expected beyond those of a plain signature
	}{
		{"SignInit", pkcs11.CKR_SESSION_HANDLE_INVALID, true, map[string]int{"OpenSession": 1, "SignInit": 1, "Login": 0}},
		{"Sign", pkcs11.CKR_SESSION_CLOSED, true, map[string]int{"OpenSession": 1, "SignInit": 1, "Login": 0}},
		{"SignInit", pkcs11.CKR_USER_NOT_LOGGED_IN, true, map[string]int{"Login": 1, "FindObjectsInit": 1, "SignInit": 1}},
		{"SignInit", pkcs11.CKR_KEY_HANDLE_INVALID, true, map[string]int{"Login": 1, "FindObjectsInit": 1, "SignInit": 1}},
		{"Sign", pkcs11.CKR_OBJECT_HANDLE_INVALID, true, map[string]int{"Login": 1, "FindObjectsInit": 1, "SignInit": 1}},
		{"Sign", pkcs11.CKR_FUNCTION_FAILED, false, map[string]int{"SignInit": 0, "Login": 0}},
		{"SignInit", pkcs11.CKR_MECHANISM_INVALID, false, map[string]int{"SignInit": 0, "Login": 0}},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s/%s", tt.method, ckr.Name(pkcs11.Error(tt.code)))
		t.Run(name, func(t *testing.T) {
			cfg := config(faultTok)
			cfg.MaxSessions = 1
			tok, fake := openFault(t, cfg)
			signAndVerify(t, tok, key.ID, key.Public) // opens the session, caches the key
			before := map[string]int{}
			for m := range tt.more {
				before[m] = fake.Calls(m)
			}
			// A plain signature: SignInit and Sign once each.
			plain := map[string]int{"SignInit": 1}

			fake.FailOnce(tt.method, tt.code)
			d := digestOf(crypto.SHA256, []byte(name))
			_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d)
			if tt.ok && err != nil {
				t.Fatalf("not recovered: %v", err)
			}
			if !tt.ok {
				if err == nil {
					t.Fatal("succeeded")
				}
				if got := ReturnCode(err); got != ckr.Name(pkcs11.Error(tt.code)) {
					t.Fatalf("error %v has code %q", err, got)
				}
			}
			for m, want := range tt.more {
				if got := fake.Calls(m) - before[m] - plain[m]; got != want {
					t.Errorf("%d more calls of %s, want %d", got, m, want)
				}
			}
			if !tok.Available() {
				t.Error("token unavailable")
			}
			signAndVerify(t, tok, key.ID, key.Public)
		})
	}
}

func TestRecoverRetriesOnce(t *testing.T) {
	key := faultKey(t)
	tests := []struct {
		code  uint
		calls int // SignInit calls before giving up
	}{
		{pkcs11.CKR_SESSION_HANDLE_INVALID, 2},
		{pkcs11.CKR_KEY_HANDLE_INVALID, 2},
	}
	for _, tt := range tests {
		t.Run(ckr.Name(pkcs11.Error(tt.code)), func(t *testing.T) {
			tok, fake := openFault(t, config(faultTok))
			signAndVerify(t, tok, key.ID, key.Public)
			fake.Hook(func(m string) error {
				if m == "SignInit" {
					return pkcs11.Error(tt.code)
				}
				return nil
			})
			before := fake.Calls("SignInit")
			_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, digestOf(crypto.SHA256, nil))
			if ReturnCode(err) != ckr.Name(pkcs11.Error(tt.code)) {
				t.Fatalf("error %v", err)
			}
			if n := fake.Calls("SignInit") - before; n != tt.calls {
				t.Errorf("%d SignInit calls, want %d", n, tt.calls)
			}
		})
	}
}

// TestRecoverDeviceError: a device error marks the token unavailable, and
// the background reconnect (C_Finalize, C_Initialize, find by label, login)
// brings it back. Other Tokens on the module survive the re-initialization.
func TestRecoverDeviceError(t *testing.T) {
	cfg, logs := loggedConfig(faultTok)
	key, tok, fake := openFaultSigned(t, cfg)

	// The device fails signatures, and while it is down the token cannot
	// be found either.
	var down atomic.Bool
	down.Store(true)
	fake.Hook(func(m string) error {
		if down.Load() && (m == "SignInit" || m == "GetSlotList") {
			return pkcs11.Error(pkcs11.CKR_DEVICE_ERROR)
		}
		return nil
	})
	d := digestOf(crypto.SHA256, []byte("device error"))
	_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d)
	if !errors.Is(err, ErrTokenUnavailable) || ReturnCode(err) != "CKR_DEVICE_ERROR" {
		t.Fatalf("error %v, want ErrTokenUnavailable with CKR_DEVICE_ERROR", err)
	}
	t.Log(err)
	if tok.Available() {
		t.Fatal("Available after a device error")
	}
	// While down, calls fail fast without touching the module.
	signInits := fake.Calls("SignInit")
	for range 3 {
		if _, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d); !errors.Is(err, ErrTokenUnavailable) {
			t.Fatalf("sign while down: %v", err)
		}
	}
	if err := tok.Ping(context.Background()); !errors.Is(err, ErrTokenUnavailable) {
		t.Fatalf("Ping while down: %v", err)
	}
	if fake.Calls("SignInit") != signInits {
		t.Error("module called while the token is unavailable")
	}
	// Let the reconnect loop fail a few times, then bring the device back.
	waitFor(t, "reconnect attempts", func() bool { return fake.Calls("GetSlotList") >= 4 })
	down.Store(false)
	waitFor(t, "reconnect", tok.Available)

	if err := tok.Ping(context.Background()); err != nil {
		t.Fatalf("Ping after reconnect: %v", err)
	}
	signAndVerify(t, tok, key.ID, key.Public)
	if n := logs.count("token unavailable"); n != 1 {
		t.Errorf("outage logged %d times, want once:\n%s", n, logs.String())
	}
	if logs.count("level=ERROR") != 1 {
		t.Errorf("more than one error logged for one outage:\n%s", logs.String())
	}
	if logs.count("token available again") != 1 {
		t.Errorf("recovery not logged:\n%s", logs.String())
	}

	// The module was finalized under shared's feet: its sessions and
	// handles are void, and it opens them again.
	if err := shared.Ping(context.Background()); err != nil {
		t.Fatalf("shared Ping after re-initialization: %v", err)
	}
	signAndVerify(t, shared, sharedKey.ID, sharedKey.Public)
}

// TestRecoverDeviceErrorConcurrent: many signers hit the outage at once;
// only one reconnect runs and the token comes back.
func TestRecoverDeviceErrorConcurrent(t *testing.T) {
	cfg, logs := loggedConfig(faultTok)
	cfg.MaxSessions = 2
	key, tok, fake := openFaultSigned(t, cfg)
	fake.FailOnce("Sign", pkcs11.CKR_DEVICE_REMOVED)

	var wg sync.WaitGroup
	var unavailable atomic.Int32
	for range 8 {
		wg.Go(func() {
			for range 10 {
				_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, digestOf(crypto.SHA256, nil))
				switch {
				case errors.Is(err, ErrTokenUnavailable):
					unavailable.Add(1)
				case err != nil:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if unavailable.Load() == 0 {
		t.Error("no signer saw the outage")
	}
	waitFor(t, "reconnect", tok.Available)
	signAndVerify(t, tok, key.ID, key.Public)
	if n := logs.count("token unavailable"); n != 1 {
		t.Errorf("outage logged %d times, want once", n)
	}
	if n := logs.count("token available again"); n != 1 {
		t.Errorf("%d reconnects, want 1", n)
	}
}

// TestPINErrorIsFatal: a PIN error during re-login is never retried.
func TestPINErrorIsFatal(t *testing.T) {
	cfg, logs := loggedConfig(faultTok)
	key, tok, fake := openFaultSigned(t, cfg)
	fake.Hook(func(m string) error {
		switch m {
		case "SignInit":
			return pkcs11.Error(pkcs11.CKR_USER_NOT_LOGGED_IN)
		case "Login":
			return pkcs11.Error(pkcs11.CKR_PIN_LOCKED)
		}
		return nil
	})
	d := digestOf(crypto.SHA256, nil)
	_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d)
	if !errors.Is(err, ErrPIN) || ReturnCode(err) != "CKR_PIN_LOCKED" {
		t.Fatalf("error %v, want ErrPIN with CKR_PIN_LOCKED", err)
	}
	logins := fake.Calls("Login")
	for range 5 {
		if _, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d); !errors.Is(err, ErrPIN) {
			t.Fatalf("later sign: %v, want ErrPIN", err)
		}
		if err := tok.Ping(context.Background()); !errors.Is(err, ErrPIN) {
			t.Fatalf("Ping: %v, want ErrPIN", err)
		}
	}
	if n := fake.Calls("Login") - logins; n != 0 {
		t.Errorf("%d more login attempts after a PIN error", n)
	}
	if tok.Available() {
		t.Error("Available after a PIN error")
	}
	if logs.count(faultTok.PIN) != 0 {
		t.Error("PIN logged")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestRecoverDeviceCodes: every device-level code makes the token
// unavailable and the reconnect brings it back.
func TestRecoverDeviceCodes(t *testing.T) {
	key := faultKey(t)
	codes := []uint{
		pkcs11.CKR_DEVICE_ERROR, pkcs11.CKR_DEVICE_REMOVED, pkcs11.CKR_TOKEN_NOT_PRESENT,
		pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED,
	}
	for _, code := range codes {
		name := ckr.Name(pkcs11.Error(code))
		t.Run(name, func(t *testing.T) {
			tok, fake := openFault(t, config(faultTok))
			signAndVerify(t, tok, key.ID, key.Public)
			fake.FailOnce("SignInit", code)
			_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, digestOf(crypto.SHA256, nil))
			if !errors.Is(err, ErrTokenUnavailable) || ReturnCode(err) != name {
				t.Fatalf("error %v, want ErrTokenUnavailable with %s", err, name)
			}
			waitFor(t, "reconnect", tok.Available)
			signAndVerify(t, tok, key.ID, key.Public)
		})
	}
}

// TestRecoverAmbiguousCodes: CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED and
// CKR_DEVICE_MEMORY mark the token down only when C_GetTokenInfo fails
// too. While the token answers, the one signature was refused
// (tpm2-pkcs11 answers CKR_GENERAL_ERROR to a template it does not like),
// nothing was signed, and the token stays available.
func TestRecoverAmbiguousCodes(t *testing.T) {
	key := faultKey(t)
	for _, code := range []uint{pkcs11.CKR_GENERAL_ERROR, pkcs11.CKR_FUNCTION_FAILED, pkcs11.CKR_DEVICE_MEMORY} {
		name := ckr.Name(pkcs11.Error(code))
		t.Run(name+"/token answers", func(t *testing.T) {
			tok, fake := openFault(t, config(faultTok))
			signAndVerify(t, tok, key.ID, key.Public)
			fake.FailOnce("SignInit", code)
			infos := fake.Calls("GetTokenInfo")
			_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, digestOf(crypto.SHA256, nil))
			if err == nil || ReturnCode(err) != name || errors.Is(err, ErrTokenUnavailable) || !NotSigned(err) {
				t.Fatalf("error %v: want a NotSigned %s that is not ErrTokenUnavailable", err, name)
			}
			if fake.Calls("GetTokenInfo") == infos {
				t.Error("the token was not asked (C_GetTokenInfo) before the error was believed")
			}
			if !tok.Available() || tok.Status().Outages != 0 {
				t.Fatalf("token marked down: %+v", tok.Status())
			}
			signAndVerify(t, tok, key.ID, key.Public)
		})
		t.Run(name+"/token silent", func(t *testing.T) {
			tok, fake := openFault(t, config(faultTok))
			signAndVerify(t, tok, key.ID, key.Public)
			fake.FailOnce("SignInit", code)
			fake.FailOnce("GetTokenInfo", pkcs11.CKR_DEVICE_ERROR)
			_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, digestOf(crypto.SHA256, nil))
			if !errors.Is(err, ErrTokenUnavailable) || ReturnCode(err) != name {
				t.Fatalf("error %v, want ErrTokenUnavailable with %s", err, name)
			}
			waitFor(t, "reconnect", tok.Available)
			signAndVerify(t, tok, key.ID, key.Public)
		})
	}
}

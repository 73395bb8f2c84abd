package hsm

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/hsmtest"
	softhsmtest "github.com/signd/signd/softhsm-test"
)

// The outage tests use faultTok, like the recovery tests: they make it
// vanish and re-initialize the module.

// TestTokenRemovedNoProbes is the outage of a real SoftHSM2 token: its
// object directory is moved away under a Token with cached key handles,
// with the default reconnect backoff, and nobody calls Ping. Signing must
// report ErrTokenUnavailable at once (never ErrKeyNotFound), proven
// unsigned; and the token must be back within 5 s of the directory's
// return, found again by label with its key.
func TestTokenRemovedNoProbes(t *testing.T) {
	key := faultKey(t)
	cfg, logs := loggedConfig(faultTok)
	// The injector only watches: it records when reconnect attempts list
	// the slots.
	var mu sync.Mutex
	var attempts []time.Time
	cfg.Wrap = func(real Ctx) Ctx {
		f := hsmtest.Wrap(real)
		f.Hook(func(m string) error {
			if m == "GetSlotList" {
				mu.Lock()
				attempts = append(attempts, time.Now())
				mu.Unlock()
			}
			return nil
		})
		return f
	}
	tok := openTest(t, cfg, options{}) // production backoff
	signAndVerify(t, tok, key.ID, key.Public)
	if st := tok.Status(); !st.Available || st.Reason != "" || st.Outages != 0 {
		t.Fatalf("status before the outage: %+v", st)
	}

	restore, err := faultTok.Remove()
	if errors.Is(err, softhsmtest.ErrExternal) {
		lacks(t, "the harness removes a token by moving SoftHSM2's token directory away: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restore(); err != nil {
			t.Error(err)
		}
	})
	outage := time.Now()
	d := digestOf(crypto.SHA256, []byte("during the outage"))
	_, err = tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d)
	if !errors.Is(err, ErrTokenUnavailable) {
		t.Fatalf("sign after the token vanished: %v, want ErrTokenUnavailable", err)
	}
	if errors.Is(err, ErrKeyNotFound) || !NotSigned(err) {
		t.Errorf("error %v: key not found %v, not signed %v", err, errors.Is(err, ErrKeyNotFound), NotSigned(err))
	}
	if st := tok.Status(); st.Available || st.Reason != "token unavailable, reconnecting" || st.Outages != 1 {
		t.Errorf("status during the outage: %+v", st)
	}
	// Every call fails fast and unsigned while the token is away.
	for range 5 {
		start := time.Now()
		_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d)
		if !errors.Is(err, ErrTokenUnavailable) || !NotSigned(err) {
			t.Fatalf("sign during the outage: %v", err)
		}
		if err := tok.CheckKey(context.Background(), key.ID); !errors.Is(err, ErrTokenUnavailable) {
			t.Fatalf("CheckKey during the outage: %v", err)
		}
		if el := time.Since(start); el > 200*time.Millisecond {
			t.Errorf("a call during the outage took %v", el)
		}
	}
	// Stay away long enough for the backoff to reach its cap.
	time.Sleep(3500*time.Millisecond - time.Since(outage))
	if tok.Available() {
		t.Fatal("available while the token is away")
	}

	if err := restore(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	deadline := back.Add(5 * time.Second)
	for !tok.Available() {
		if time.Now().After(deadline) {
			t.Fatalf("token not available 5 s after it came back; log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("available again %v after the token came back", time.Since(back).Round(time.Millisecond))
	signAndVerify(t, tok, key.ID, key.Public)
	if st := tok.Status(); !st.Available || st.Reason != "" || st.Outages != 1 {
		t.Errorf("status after the outage: %+v", st)
	}

	mu.Lock()
	gaps := make([]time.Duration, 0, len(attempts))
	for i := 1; i < len(attempts); i++ {
		gaps = append(gaps, attempts[i].Sub(attempts[i-1]))
	}
	mu.Unlock()
	if len(gaps) < 4 || slices.Max(gaps) > 2200*time.Millisecond {
		t.Errorf("reconnect attempts %d apart by %v: want capped at 2 s", len(gaps)+1, gaps)
	}
	if n := logs.count("token unavailable"); n != 1 {
		t.Errorf("outage logged %d times:\n%s", n, logs.String())
	}
	// The other Tokens of the module survived the re-initializations.
	signAndVerify(t, shared, sharedKey.ID, sharedKey.Public)
}

// TestKeyGoneIsNotAnOutage: a key destroyed behind the Token's back while
// the token is fine is ErrKeyNotFound (a problem of one credential), and
// the token stays available.
func TestKeyGoneIsNotAnOutage(t *testing.T) {
	ctx := context.Background()
	tok, fake := openFault(t, config(faultTok))
	info, err := tok.GenerateRSA(ctx, "gone-key", 2048)
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID
	signAndVerify(t, tok, id, info.Public) // cached
	other := openTest(t, config(faultTok), options{})
	if err := other.DestroyKey(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err = tok.SignDigest(ctx, id, crypto.SHA256, digestOf(crypto.SHA256, nil))
	if !errors.Is(err, ErrKeyNotFound) || errors.Is(err, ErrTokenUnavailable) || !NotSigned(err) {
		t.Fatalf("sign with a destroyed key: %v", err)
	}
	if err := tok.CheckKey(ctx, id); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("CheckKey with a destroyed key: %v", err)
	}
	if !tok.Available() || tok.Status().Outages != 0 {
		t.Fatalf("a missing key made the token unavailable: %+v", tok.Status())
	}
	if fake.Calls("GetTokenInfo") == 0 {
		t.Error("not found was believed without asking the token")
	}
	signAndVerify(t, tok, faultKey(t).ID, faultKey(t).Public)
}

// TestDeviceErrorFromAnyCall: a device-class error marks the token
// unavailable at once whichever call on whichever path returns it, with no
// Ping, and the background reconnect brings it back.
func TestDeviceErrorFromAnyCall(t *testing.T) {
	key := faultKey(t)
	ops := map[string]func(tok *Token) error{
		"sign": func(tok *Token) error {
			_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, digestOf(crypto.SHA256, nil))
			return err
		},
		"check key": func(tok *Token) error { return tok.CheckKey(context.Background(), key.ID) },
		"load unknown key": func(tok *Token) error {
			_, err := tok.Key(context.Background(), randomID(t))
			return err
		},
		"list keys": func(tok *Token) error {
			_, err := tok.Keys(context.Background())
			return err
		},
	}
	tests := []struct {
		op, method string
		code       uint
		cold       bool // with an empty handle cache and no pool session
	}{
		{"sign", "SignInit", pkcs11.CKR_DEVICE_ERROR, false},
		{"sign", "Sign", pkcs11.CKR_DEVICE_REMOVED, false},
		{"sign", "OpenSession", pkcs11.CKR_TOKEN_NOT_PRESENT, true},
		{"sign", "FindObjectsInit", pkcs11.CKR_DEVICE_ERROR, true},
		{"check key", "FindObjects", pkcs11.CKR_DEVICE_REMOVED, true},
		// Ambiguous codes are device errors only when C_GetTokenInfo
		// fails too (TestRecoverAmbiguousCodes); from C_GetTokenInfo
		// itself they are.
		{"load unknown key", "GetTokenInfo", pkcs11.CKR_GENERAL_ERROR, false},
		{"check key", "GetAttributeValue", pkcs11.CKR_SLOT_ID_INVALID, true},
		{"load unknown key", "GetSessionInfo", pkcs11.CKR_TOKEN_NOT_RECOGNIZED, false},
		// A find that found nothing is believed only if the token answers
		// C_GetTokenInfo, whatever it answers instead.
		{"load unknown key", "GetTokenInfo", pkcs11.CKR_FUNCTION_FAILED, false},
		{"list keys", "FindObjectsFinal", pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.op, tt.method, ckr.Name(pkcs11.Error(tt.code))), func(t *testing.T) {
			cfg := config(faultTok)
			cfg.MaxSessions = 1
			tok, fake := openFault(t, cfg)
			if !tt.cold {
				signAndVerify(t, tok, key.ID, key.Public)
			}
			fake.FailOnce(tt.method, tt.code)
			err := ops[tt.op](tok)
			if !errors.Is(err, ErrTokenUnavailable) || ReturnCode(err) != ckr.Name(pkcs11.Error(tt.code)) {
				t.Fatalf("%s: %v, want ErrTokenUnavailable with %s", tt.op, err, ckr.Name(pkcs11.Error(tt.code)))
			}
			if tok.Available() {
				t.Fatal("still available after a device error")
			}
			if got := tok.Status().Outages; got != 1 {
				t.Errorf("%d outages counted", got)
			}
			waitFor(t, "reconnect", tok.Available)
			signAndVerify(t, tok, key.ID, key.Public)
		})
	}
}

// TestTokenGoneInjected: while the token is gone every reconnect attempt
// re-initializes the module (a module lists only the tokens present at
// C_Initialize), so the token is found as soon as it is back.
func TestTokenGoneInjected(t *testing.T) {
	key, tok, fake := openFaultSigned(t, config(faultTok))
	epoch := func() uint64 {
		tok.mod.Mu.RLock()
		defer tok.mod.Mu.RUnlock()
		return tok.mod.Epoch
	}
	before := epoch()
	fake.SetGone(true)
	_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, digestOf(crypto.SHA256, nil))
	if !errors.Is(err, ErrTokenUnavailable) || !NotSigned(err) {
		t.Fatalf("sign with the token gone: %v", err)
	}
	waitFor(t, "four re-initializations", func() bool { return epoch()-before >= 4 })
	if tok.Available() {
		t.Fatal("available while the token is gone")
	}
	fake.SetGone(false)
	waitFor(t, "reconnect", tok.Available)
	signAndVerify(t, tok, key.ID, key.Public)
}

// TestFailFastDuringReconnect: a reconnect attempt that hangs in the
// module (a slow C_GetSlotList) does not hold up callers: they get
// ErrTokenUnavailable at once instead of queueing behind the reconnect.
func TestFailFastDuringReconnect(t *testing.T) {
	key, tok, fake := openFaultSigned(t, config(faultTok))
	slotLists := fake.Calls("GetSlotList")
	fake.Inject("GetSlotList", hsmtest.Fault{Delay: 700 * time.Millisecond, Times: 1})
	fake.FailOnce("SignInit", pkcs11.CKR_DEVICE_ERROR)
	d := digestOf(crypto.SHA256, nil)
	if _, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d); !errors.Is(err, ErrTokenUnavailable) {
		t.Fatalf("sign: %v", err)
	}
	waitFor(t, "the reconnect to reach C_GetSlotList", func() bool { return fake.Calls("GetSlotList") > slotLists })
	start := time.Now()
	_, err := tok.SignDigest(context.Background(), key.ID, crypto.SHA256, d)
	if el := time.Since(start); el > 200*time.Millisecond {
		t.Errorf("sign during a slow reconnect took %v", el)
	}
	if !errors.Is(err, ErrTokenUnavailable) {
		t.Errorf("sign during a slow reconnect: %v", err)
	}
	if err := tok.Ping(context.Background()); !errors.Is(err, ErrTokenUnavailable) {
		t.Errorf("Ping during a slow reconnect: %v", err)
	}
	waitFor(t, "reconnect", tok.Available)
	signAndVerify(t, tok, key.ID, key.Public)
}

// badSigner corrupts every signature the module returns.
type badSigner struct{ *hsmtest.Faults }

func (b badSigner) Sign(sh pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	sig, err := b.Faults.Sign(sh, msg)
	if err == nil && len(sig) > 0 {
		sig[len(sig)/2] ^= 1
	}
	return sig, err
}

// TestNotSigned: NotSigned vouches only for failures after which no
// signature exists outside the token.
func TestNotSigned(t *testing.T) {
	ctx := context.Background()
	d := digestOf(crypto.SHA256, []byte("not signed"))
	key, tok, fake := openFaultSigned(t, config(faultTok))

	tests := []struct {
		name   string
		inject func(t *testing.T)
		want   bool
	}{
		{"signed", func(*testing.T) {}, false},
		{"C_SignInit device error", func(*testing.T) { fake.FailOnce("SignInit", pkcs11.CKR_DEVICE_ERROR) }, true},
		{"C_Sign device error", func(*testing.T) { fake.FailOnce("Sign", pkcs11.CKR_DEVICE_ERROR) }, true},
		{"C_Sign caller error", func(*testing.T) { fake.FailOnce("Sign", pkcs11.CKR_FUNCTION_FAILED) }, true},
		{"token unavailable", func(t *testing.T) {
			// A device error, then a reconnect slow enough to sign into.
			fake.Inject("GetSlotList", hsmtest.Fault{Delay: 300 * time.Millisecond, Times: 1})
			fake.FailOnce("SignInit", pkcs11.CKR_DEVICE_ERROR)
			if _, err := tok.SignDigest(ctx, key.ID, crypto.SHA256, d); !errors.Is(err, ErrTokenUnavailable) {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waitFor(t, "token available", tok.Available)
			tt.inject(t)
			sig, err := tok.SignDigest(ctx, key.ID, crypto.SHA256, d)
			if got := NotSigned(err); got != tt.want || (err == nil) != (sig != nil) {
				t.Fatalf("NotSigned(%v) = %v, want %v (signature %d bytes)", err, got, tt.want, len(sig))
			}
		})
	}
	if NotSigned(nil) || NotSigned(errors.New("hsm: sign: timed out after C_Sign")) {
		t.Error("NotSigned vouches for an unknown outcome")
	}
	if _, err := tok.SignDigest(ctx, key.ID, crypto.SHA256, d[:31]); !errors.Is(err, ErrBadDigest) || !NotSigned(err) {
		t.Errorf("short digest: %v", err)
	}

	// A signature the token returned but that does not verify was made:
	// it is not "not signed".
	cfg := config(faultTok)
	cfg.Wrap = func(real Ctx) Ctx { return badSigner{hsmtest.Wrap(real)} }
	bad := openTest(t, cfg, options{})
	_, err := bad.SignDigest(ctx, key.ID, crypto.SHA256, d)
	if err == nil || !strings.Contains(err.Error(), "invalid signature") || NotSigned(err) {
		t.Fatalf("corrupted signature: %v (NotSigned %v)", err, NotSigned(err))
	}
}

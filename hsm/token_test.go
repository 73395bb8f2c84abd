package hsm

import (
	"context"
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
)

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notLib := filepath.Join(dir, "not-a-module.so")
	if err := os.WriteFile(notLib, []byte("not ELF"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing", "libsofthsm2.so")
	tests := []struct {
		name    string
		edit    func(*Config)
		want    error
		mention string // the error must name it
	}{
		{"relative module", func(c *Config) { c.Module = "libsofthsm2.so" }, ErrModule, `"libsofthsm2.so"`},
		{"dot-relative module", func(c *Config) { c.Module = "./lib/libsofthsm2.so" }, ErrModule, "./lib/libsofthsm2.so"},
		{"missing module", func(c *Config) { c.Module = missing }, ErrModule, missing},
		{"not a module", func(c *Config) { c.Module = notLib }, ErrModule, notLib},
		{"directory", func(c *Config) { c.Module = dir }, ErrModule, dir},
		{"no module", func(c *Config) { c.Module = "" }, ErrModule, ""},
		{"unknown token", func(c *Config) { c.TokenLabel = "no-such-token" }, ErrTokenNotFound, `"no-such-token"`},
		{"no token label", func(c *Config) { c.TokenLabel = "" }, ErrTokenNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(mainTok)
			tt.edit(&cfg)
			tok, err := Open(cfg)
			if err == nil {
				tok.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
			if strings.Contains(err.Error(), mainTok.PIN) {
				t.Errorf("error %q contains the PIN", err)
			}
		})
	}
}

func TestOpenSymlinkSharesModule(t *testing.T) {
	link := filepath.Join(t.TempDir(), "libpkcs11.so")
	if err := os.Symlink(mainTok.Module, link); err != nil {
		t.Fatal(err)
	}
	cfg := config(mainTok)
	cfg.Module = link
	tok := openTest(t, cfg, options{})
	if tok.mod != shared.mod {
		t.Fatalf("module %s not shared with %s", tok.mod.Path, shared.mod.Path)
	}
	signAndVerify(t, tok, sharedKey.ID, sharedKey.Public)
}

func TestWrongPIN(t *testing.T) {
	const wrongPIN = "wrong-9f3a71c2"
	pinTok := spareToken(t)
	if pinTok.PIN == wrongPIN {
		t.Fatal("the token's PIN is the wrong PIN of this test")
	}
	var logs logBuffer
	cfg := config(pinTok)
	cfg.PIN = wrongPIN
	cfg.Logger = logs.logger()
	tok, err := Open(cfg)
	if err == nil {
		tok.Close()
		t.Fatal("Open with a wrong PIN succeeded")
	}
	t.Log(err)
	if !errors.Is(err, ErrPIN) {
		t.Errorf("error %v, want ErrPIN", err)
	}
	if got := ReturnCode(err); got != "CKR_PIN_INCORRECT" {
		t.Errorf("ReturnCode %q, want CKR_PIN_INCORRECT", got)
	}
	msg := err.Error()
	if !strings.Contains(msg, `"`+pinTok.Label+`"`) || !strings.Contains(msg, "CKR_PIN_INCORRECT") {
		t.Errorf("error %q does not name the token and the return code", msg)
	}
	if strings.Contains(msg, wrongPIN) || strings.Contains(logs.String(), wrongPIN) {
		t.Errorf("the PIN leaked: %q / logs %q", msg, logs.String())
	}
	// One wrong attempt does not lock the token; the right PIN works.
	tok = openTest(t, config(pinTok), options{})
	if err := tok.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestReturnCode(t *testing.T) {
	// miekg/pkcs11 names the codes itself; ReturnCode relies on it.
	if got := pkcs11.Error(pkcs11.CKR_PIN_INCORRECT).Error(); got != "pkcs11: 0xA0: CKR_PIN_INCORRECT" {
		t.Fatalf("miekg/pkcs11 formats errors as %q", got)
	}
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("other"), ""},
		{ErrPIN, ""},
		{pkcs11.Error(pkcs11.CKR_PIN_INCORRECT), "CKR_PIN_INCORRECT"},
		{ckr.Wrap("C_Login", pkcs11.Error(pkcs11.CKR_PIN_INCORRECT)), "CKR_PIN_INCORRECT"},
		{fmt.Errorf("hsm: x: %w: %w", ErrTokenUnavailable, ckr.Wrap("C_Sign", pkcs11.Error(pkcs11.CKR_DEVICE_ERROR))), "CKR_DEVICE_ERROR"},
		{pkcs11.Error(pkcs11.CKR_SESSION_HANDLE_INVALID), "CKR_SESSION_HANDLE_INVALID"},
		{pkcs11.Error(0x80000123), "CKR_0x80000123"},
	}
	for _, tt := range tests {
		if got := ReturnCode(tt.err); got != tt.want {
			t.Errorf("ReturnCode(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if got := ckr.Wrap("C_Login", pkcs11.Error(pkcs11.CKR_PIN_INCORRECT)).Error(); got != "C_Login: CKR_PIN_INCORRECT (0xa0)" {
		t.Errorf("ckr error reads %q", got)
	}
}

func TestPing(t *testing.T) {
	if err := shared.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !shared.Available() || shared.Label() != mainTok.Label {
		t.Fatalf("Available %v, Label %q", shared.Available(), shared.Label())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := shared.Ping(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ping with canceled context: %v", err)
	}
}

func TestClose(t *testing.T) {
	tok, err := Open(config(mainTok))
	if err != nil {
		t.Fatal(err)
	}
	key, err := tok.Key(context.Background(), sharedKey.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tok.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if tok.Available() {
		t.Error("Available after Close")
	}
	if _, err := key.Sign(nil, digestOf(crypto.SHA256, nil), crypto.SHA256); !errors.Is(err, ErrClosed) {
		t.Errorf("Sign after Close: %v, want ErrClosed", err)
	}
	if err := tok.Ping(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close: %v, want ErrClosed", err)
	}
	// Closing one Token leaves the others working.
	signAndVerify(t, shared, sharedKey.ID, sharedKey.Public)
}

func TestOpenCloseRefcount(t *testing.T) {
	// Tokens on one module share it; closing them drops their references
	// (shared keeps the module initialized, so no C_Finalize here).
	other := pinTok
	if other == nil {
		other = mainTok // an existing token without spares
	}
	for range 2 {
		tok, err := Open(config(other))
		if err != nil {
			t.Fatal(err)
		}
		if err := tok.Close(); err != nil {
			t.Fatal(err)
		}
	}
	refs := shared.mod.Refs()
	if refs != 1 {
		t.Fatalf("module has %d references, want 1 (shared)", refs)
	}
}

// TestConcurrentSign signs from 16 goroutines through a pool of 2
// sessions (run under -race by make test).
func TestConcurrentSign(t *testing.T) {
	var metrics recordingMetrics
	cfg := config(mainTok)
	cfg.MaxSessions = 2
	cfg.Metrics = &metrics
	tok := openTest(t, cfg, options{})
	key, err := tok.Key(context.Background(), sharedKey.ID)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 16, 10
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				d := digestOf(crypto.SHA256, fmt.Appendf(nil, "%d/%d", g, i))
				sig, err := key.SignDigest(context.Background(), crypto.SHA256, d)
				if err == nil {
					err = rsa.VerifyPKCS1v15(sharedKey.Public.(*rsa.PublicKey), crypto.SHA256, d, sig)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	if metrics.signs != goroutines*each || metrics.signErrs != 0 || metrics.poolWaits < goroutines*each {
		t.Errorf("metrics: %d signs, %d errors, %d pool waits", metrics.signs, metrics.signErrs, metrics.poolWaits)
	}
	if n := countOpen(tok); n > 2 {
		t.Errorf("%d pool sessions open, MaxSessions is 2", n)
	}
}

// countOpen counts the pool's open sessions.
func countOpen(tok *Token) int {
	tok.mu.Lock()
	defer tok.mu.Unlock()
	hs := tok.pool.Take()
	defer tok.pool.Put(hs)
	n := 0
	for _, s := range hs {
		if s.H != 0 {
			n++
		}
	}
	return n
}

func TestPoolExhausted(t *testing.T) {
	cfg := config(mainTok)
	cfg.MaxSessions = 1
	cfg.AcquireTimeout = 50 * time.Millisecond
	tok := openTest(t, cfg, options{})
	signAndVerify(t, tok, sharedKey.ID, sharedKey.Public)

	// Hold the only session.
	s, err := tok.pool.Acquire(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d := digestOf(crypto.SHA256, []byte("busy"))

	start := time.Now()
	_, err = tok.SignDigest(context.Background(), sharedKey.ID, crypto.SHA256, d)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("SignDigest with the pool exhausted: %v, want ErrBusy", err)
	}
	// Only the lower bound is checked: it waited. Tests never fail on slowness.
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("gave up after %v, AcquireTimeout is 50ms", el)
	}

	// The context bounds the wait too.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = tok.SignDigest(ctx, sharedKey.ID, crypto.SHA256, d)
	if !errors.Is(err, ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SignDigest with an expiring context: %v, want ErrBusy and DeadlineExceeded", err)
	}

	tok.pool.Release(s)
	signAndVerify(t, tok, sharedKey.ID, sharedKey.Public)
}

func TestPINNeverPrinted(t *testing.T) {
	var logs logBuffer
	cfg := config(mainTok)
	cfg.Logger = logs.logger()
	tok := openTest(t, cfg, options{})
	cfg.Logger.Info("config", "config", cfg, "token", tok)
	for _, s := range []string{
		fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg),
		fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok),
		fmt.Sprintf("%v %+v", &cfg, &cfg),
		logs.String(),
	} {
		if strings.Contains(s, mainTok.PIN) {
			t.Errorf("PIN printed: %s", s)
		}
	}
	if !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("config not logged: %s", logs.String())
	}

	empty := config(mainTok)
	empty.PIN = ""
	if _, err := Open(empty); !errors.Is(err, ErrPIN) {
		t.Errorf("Open without a PIN: %v, want ErrPIN", err)
	}
}

package softtoken_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
)

// newKey returns a token holding one RSA-2048 key.
func newKey(t *testing.T, opts softtoken.Options) (*softtoken.Token, *hsm.KeyInfo) {
	t.Helper()
	tok := softtoken.New(opts)
	info, err := tok.GenerateRSA(context.Background(), "test-key", 2048)
	if err != nil {
		t.Fatal(err)
	}
	return tok, info
}

func TestGenerateRSA(t *testing.T) {
	tok, first := newKey(t, softtoken.Options{})
	if first.Bits != 2048 || first.Public.(*rsa.PublicKey).N.BitLen() != 2048 || len(first.ID) != 16 || first.Label != "test-key" {
		t.Fatalf("key info %d bits, ID %x, label %q", first.Bits, first.ID, first.Label)
	}
	cases := []struct {
		name  string
		label string
		bits  int
		want  error // nil: any error
	}{
		{"1024 bits", "small", 1024, hsm.ErrUnsupportedAlgorithm},
		{"2047 bits", "odd", 2047, hsm.ErrUnsupportedAlgorithm},
		{"8192 bits", "big", 8192, hsm.ErrUnsupportedAlgorithm},
		{"label in use", "test-key", 2048, hsm.ErrLabelExists},
		{"empty label", "", 2048, nil},
		{"long label", strings.Repeat("x", 129), 2048, nil},
		{"label not UTF-8", "\xff", 2048, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tok.GenerateRSA(context.Background(), tc.label, tc.bits)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("GenerateRSA(%q, %d) = %v, want %v", tc.label, tc.bits, err, tc.want)
			}
		})
	}
	keys, err := tok.Keys(context.Background())
	if err != nil || len(keys) != 1 || string(keys[0].ID) != string(first.ID) {
		t.Errorf("Keys after the refusals: %v, %v", keys, err)
	}
}

func TestSignaturesVerify(t *testing.T) {
	tok, info := newKey(t, softtoken.Options{})
	key, err := tok.Key(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if key.Label() != info.Label || string(key.ID()) != string(info.ID) || key.Bits() != 2048 || !key.Public().(*rsa.PublicKey).Equal(info.Public) {
		t.Fatalf("Key does not describe the generated key")
	}
	msg := []byte("signed by the software token")
	d256, d384, d512 := sha256.Sum256(msg), sha512.Sum384(msg), sha512.Sum512(msg)
	cases := []struct {
		hash   crypto.Hash
		digest []byte
	}{
		{crypto.SHA256, d256[:]},
		{crypto.SHA384, d384[:]},
		{crypto.SHA512, d512[:]},
	}
	for _, tc := range cases {
		t.Run(tc.hash.String(), func(t *testing.T) {
			sig, err := tok.SignDigest(context.Background(), info.ID, tc.hash, tc.digest)
			if err != nil {
				t.Fatal(err)
			}
			if err := rsa.VerifyPKCS1v15(info.Public.(*rsa.PublicKey), tc.hash, tc.digest, sig); err != nil {
				t.Errorf("SignDigest: %v", err)
			}
			sig, err = key.Sign(rand.Reader, tc.digest, tc.hash) // crypto.Signer
			if err != nil {
				t.Fatal(err)
			}
			if err := rsa.VerifyPKCS1v15(info.Public.(*rsa.PublicKey), tc.hash, tc.digest, sig); err != nil {
				t.Errorf("Key.Sign: %v", err)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	tok, info := newKey(t, softtoken.Options{})
	key, err := tok.Key(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256([]byte("x"))
	cases := []struct {
		name string
		sign func() ([]byte, error)
		want error
	}{
		{"SHA-1", func() ([]byte, error) { return tok.SignDigest(context.Background(), info.ID, crypto.SHA1, d[:20]) }, hsm.ErrUnsupportedAlgorithm},
		{"short digest", func() ([]byte, error) { return tok.SignDigest(context.Background(), info.ID, crypto.SHA256, d[:31]) }, hsm.ErrBadDigest},
		{"long digest", func() ([]byte, error) {
			return tok.SignDigest(context.Background(), info.ID, crypto.SHA256, append(d[:], 0))
		}, hsm.ErrBadDigest},
		{"unknown key", func() ([]byte, error) {
			return tok.SignDigest(context.Background(), []byte("nope"), crypto.SHA256, d[:])
		}, hsm.ErrKeyNotFound},
		{"PSS", func() ([]byte, error) { return key.Sign(nil, d[:], &rsa.PSSOptions{Hash: crypto.SHA256}) }, hsm.ErrUnsupportedAlgorithm},
		{"no hash", func() ([]byte, error) { return key.Sign(nil, d[:], nil) }, hsm.ErrUnsupportedAlgorithm},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := tc.sign()
			if !errors.Is(err, tc.want) || sig != nil {
				t.Fatalf("got %x, %v; want %v", sig, err, tc.want)
			}
			if tc.name != "PSS" && tc.name != "no hash" && !hsm.NotSigned(err) {
				t.Errorf("hsm.NotSigned(%v) = false", err)
			}
		})
	}
}

func TestKeyLifeCycle(t *testing.T) {
	ctx := context.Background()
	tok, a := newKey(t, softtoken.Options{})
	b, err := tok.GenerateRSA(ctx, "a-first", 2048)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := tok.Keys(ctx)
	if err != nil || len(keys) != 2 || keys[0].Label != "a-first" || keys[1].Label != "test-key" {
		t.Fatalf("Keys = %v, %v; want by label", keys, err)
	}
	if err := tok.CheckKey(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := tok.DestroyKey(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	gone := []struct {
		name string
		call func() error
	}{
		{"DestroyKey", func() error { return tok.DestroyKey(ctx, a.ID) }},
		{"DestroyKey empty ID", func() error { return tok.DestroyKey(ctx, nil) }},
		{"CheckKey", func() error { return tok.CheckKey(ctx, a.ID) }},
		{"Key", func() error { _, err := tok.Key(ctx, a.ID); return err }},
	}
	for _, tc := range gone {
		if err := tc.call(); !errors.Is(err, hsm.ErrKeyNotFound) {
			t.Errorf("%s of a destroyed key: %v, want hsm.ErrKeyNotFound", tc.name, err)
		}
	}
	if _, err := tok.GenerateRSA(ctx, "test-key", 2048); err != nil {
		t.Errorf("the label of a destroyed key is free again: %v", err)
	}
	if err := tok.CheckKey(ctx, b.ID); err != nil {
		t.Errorf("the other key: %v", err)
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	d := sha256.Sum256([]byte("faults"))
	boom := errors.New("CKR_FUNCTION_FAILED")
	cases := []struct {
		name      string
		inject    func(tok *softtoken.Token)
		errs      []error // the outcome of three SignDigest calls in a row
		notSigned bool
	}{
		{"fail once", func(tok *softtoken.Token) { tok.FailOnce(softtoken.OpSignDigest, boom) }, []error{boom, nil, nil}, true},
		{"fail always", func(tok *softtoken.Token) { tok.FailAlways(softtoken.OpSignDigest, hsm.ErrBusy) }, []error{hsm.ErrBusy, hsm.ErrBusy, hsm.ErrBusy}, true},
		{"fail twice", func(tok *softtoken.Token) {
			tok.Inject(softtoken.OpSignDigest, softtoken.Fault{Err: hsm.ErrTokenUnavailable, Times: 2})
		}, []error{hsm.ErrTokenUnavailable, hsm.ErrTokenUnavailable, nil}, true},
		{"unknown outcome", func(tok *softtoken.Token) {
			tok.Inject(softtoken.OpSignDigest, softtoken.Fault{Err: boom, Times: 1, Signed: true})
		}, []error{boom, nil, nil}, false},
		{"other operation", func(tok *softtoken.Token) { tok.FailAlways(softtoken.OpCheckKey, boom) }, []error{nil, nil, nil}, false},
		{"hook", func(tok *softtoken.Token) {
			n := 0
			tok.Hook(func(op string) error {
				if op == softtoken.OpSignDigest {
					if n++; n == 2 {
						return boom
					}
				}
				return nil
			})
		}, []error{nil, boom, nil}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, info := newKey(t, softtoken.Options{})
			tc.inject(tok)
			for i, want := range tc.errs {
				sig, err := tok.SignDigest(ctx, info.ID, crypto.SHA256, d[:])
				switch {
				case want == nil && err != nil:
					t.Fatalf("call %d: %v", i, err)
				case want == nil:
					if verr := rsa.VerifyPKCS1v15(info.Public.(*rsa.PublicKey), crypto.SHA256, d[:], sig); verr != nil {
						t.Fatalf("call %d: %v", i, verr)
					}
				case !errors.Is(err, want):
					t.Fatalf("call %d: %v, want %v", i, err, want)
				case hsm.NotSigned(err) != tc.notSigned:
					t.Fatalf("call %d: hsm.NotSigned(%v) = %v", i, err, !tc.notSigned)
				}
			}
			if n := tok.Calls(softtoken.OpSignDigest); n != len(tc.errs) {
				t.Errorf("%d SignDigest calls counted, want %d", n, len(tc.errs))
			}
			tok.Clear()
			if err := tok.CheckKey(ctx, info.ID); err != nil {
				t.Errorf("after Clear: %v", err)
			}
		})
	}
}

func TestUnknownOperationPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Inject of an unknown operation did not panic")
		}
	}()
	softtoken.New(softtoken.Options{}).FailOnce("C_Sign", errors.New("x"))
}

// TestGone: the token notices an outage at the first call that reaches the
// device, as *hsm.Token does; a known key passes CheckKey until then.
func TestGone(t *testing.T) {
	ctx := context.Background()
	tok, info := newKey(t, softtoken.Options{})
	d := sha256.Sum256([]byte("gone"))
	tok.SetGone(true)
	if !tok.Available() {
		t.Fatal("unavailable before any call found the token gone")
	}
	if err := tok.CheckKey(ctx, info.ID); err != nil {
		t.Fatalf("CheckKey of a known key before the outage is noticed: %v", err)
	}
	if err := tok.CheckKey(ctx, []byte("unknown")); !errors.Is(err, hsm.ErrTokenUnavailable) {
		t.Fatalf("CheckKey of an unknown key reaches the device: %v", err)
	}
	if tok.Available() {
		t.Fatal("still available after a call found the token gone")
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"SignDigest", func() error {
			_, err := tok.SignDigest(ctx, info.ID, crypto.SHA256, d[:])
			if err != nil && !hsm.NotSigned(err) {
				t.Errorf("hsm.NotSigned(%v) = false", err)
			}
			return err
		}},
		{"CheckKey", func() error { return tok.CheckKey(ctx, info.ID) }},
		{"Key", func() error { _, err := tok.Key(ctx, info.ID); return err }},
		{"Keys", func() error { _, err := tok.Keys(ctx); return err }},
		{"GenerateRSA", func() error { _, err := tok.GenerateRSA(ctx, "during", 2048); return err }},
		{"DestroyKey", func() error { return tok.DestroyKey(ctx, info.ID) }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, hsm.ErrTokenUnavailable) {
			t.Errorf("%s while gone: %v", c.name, err)
		}
	}
	tok.SetGone(false)
	if !tok.Available() {
		t.Fatal("not available once back")
	}
	if _, err := tok.SignDigest(ctx, info.ID, crypto.SHA256, d[:]); err != nil {
		t.Fatalf("sign once back: %v", err)
	}
}

// TestBusy: with one session, a slow call makes others wait and give up
// with hsm.ErrBusy; a cancelled context gives up at once.
func TestBusy(t *testing.T) {
	tok, info := newKey(t, softtoken.Options{Sessions: 1, AcquireTimeout: 20 * time.Millisecond})
	d := sha256.Sum256([]byte("busy"))
	tok.Inject(softtoken.OpSignDigest, softtoken.Fault{Delay: 300 * time.Millisecond, Times: 1})
	var wg sync.WaitGroup
	started := time.Now()
	wg.Go(func() {
		if _, err := tok.SignDigest(context.Background(), info.ID, crypto.SHA256, d[:]); err != nil {
			t.Error(err)
		}
	})
	for tok.Calls(softtoken.OpSignDigest) == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := tok.CheckKey(context.Background(), info.ID); !errors.Is(err, hsm.ErrBusy) {
		t.Errorf("CheckKey while the only session is busy: %v", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tok.SignDigest(cancelled, info.ID, crypto.SHA256, d[:])
	if !errors.Is(err, hsm.ErrBusy) || !errors.Is(err, context.Canceled) || !hsm.NotSigned(err) {
		t.Errorf("SignDigest with a cancelled context while busy: %v", err)
	}
	wg.Wait()
	if time.Since(started) < 300*time.Millisecond {
		t.Error("the injected latency was not applied")
	}
	if err := tok.CheckKey(cancelled, info.ID); err != nil {
		t.Errorf("a free session is taken even with a cancelled context, as hsm does: %v", err)
	}
}

func TestClose(t *testing.T) {
	tok, info := newKey(t, softtoken.Options{})
	if err := tok.Close(); err != nil {
		t.Fatal(err)
	}
	if tok.Available() {
		t.Error("available after Close")
	}
	if err := tok.CheckKey(context.Background(), info.ID); !errors.Is(err, hsm.ErrClosed) {
		t.Errorf("CheckKey after Close: %v", err)
	}
}

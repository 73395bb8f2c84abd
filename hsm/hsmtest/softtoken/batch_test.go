package softtoken_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
)

// TestSignDigests: a batch signs in order while holding one session, each
// signature is one SignDigest call for faults, and a failure at signature
// k of N is NotSigned only for k = 0.
func TestSignDigests(t *testing.T) {
	ctx := context.Background()
	const n = 4
	digests := make([][]byte, n)
	for i := range digests {
		d := sha256.Sum256(fmt.Appendf(nil, "batch %d", i))
		digests[i] = d[:]
	}
	boom := errors.New("CKR_FUNCTION_FAILED")

	t.Run("signs in order", func(t *testing.T) {
		tok, info := newKey(t, softtoken.Options{})
		sigs, err := tok.SignDigests(ctx, info.ID, crypto.SHA256, digests)
		if err != nil || len(sigs) != n {
			t.Fatalf("SignDigests: %d signatures, %v", len(sigs), err)
		}
		for i, sig := range sigs {
			if err := rsa.VerifyPKCS1v15(info.Public.(*rsa.PublicKey), crypto.SHA256, digests[i], sig); err != nil {
				t.Fatalf("signature %d: %v", i, err)
			}
		}
		if c := tok.Calls(softtoken.OpSignDigest); c != n {
			t.Errorf("%d SignDigest calls counted, want %d", c, n)
		}
	})

	t.Run("one session", func(t *testing.T) {
		// One session, held by the batch: a second caller waits for all
		// of it and then times out.
		tok, info := newKey(t, softtoken.Options{Sessions: 1, AcquireTimeout: 50 * time.Millisecond})
		tok.Inject(softtoken.OpSignDigest, softtoken.Fault{Delay: 40 * time.Millisecond})
		holding := make(chan struct{})
		var once sync.Once
		tok.Hook(func(string) error { // runs with the session taken
			once.Do(func() { close(holding) })
			return nil
		})
		done := make(chan error, 1)
		go func() {
			_, err := tok.SignDigests(ctx, info.ID, crypto.SHA256, digests)
			done <- err
		}()
		<-holding
		if _, err := tok.SignDigest(ctx, info.ID, crypto.SHA256, digests[0]); !errors.Is(err, hsm.ErrBusy) {
			t.Errorf("a call during the batch: %v, want busy", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})

	for k := range n {
		for _, signed := range []bool{false, true} {
			t.Run(fmt.Sprintf("fails at %d of %d, signed %v", k, n, signed), func(t *testing.T) {
				tok, info := newKey(t, softtoken.Options{})
				calls := 0
				tok.Hook(func(op string) error {
					if op == softtoken.OpSignDigest {
						if calls++; calls == k+1 {
							tok.Inject(softtoken.OpSignDigest, softtoken.Fault{Err: boom, Times: 1, Signed: signed})
						}
					}
					return nil
				})
				sigs, err := tok.SignDigests(ctx, info.ID, crypto.SHA256, digests)
				if !errors.Is(err, boom) || sigs != nil {
					t.Fatalf("SignDigests: %d signatures, %v; want %v", len(sigs), err, boom)
				}
				if got, want := hsm.NotSigned(err), k == 0 && !signed; got != want {
					t.Fatalf("hsm.NotSigned(%v) = %v, want %v", err, got, want)
				}
				if c := tok.Calls(softtoken.OpSignDigest); c != k+1 {
					t.Errorf("%d SignDigest calls counted, want %d: the batch went on after the failure", c, k+1)
				}
			})
		}
	}

	t.Run("rejects", func(t *testing.T) {
		tok, info := newKey(t, softtoken.Options{})
		for _, tc := range []struct {
			name    string
			digests [][]byte
			want    error
		}{
			{"none", nil, hsm.ErrBadDigest},
			{"last short", [][]byte{digests[0], digests[1][:31]}, hsm.ErrBadDigest},
		} {
			if _, err := tok.SignDigests(ctx, info.ID, crypto.SHA256, tc.digests); !errors.Is(err, tc.want) || !hsm.NotSigned(err) {
				t.Errorf("%s: %v, want %v and NotSigned", tc.name, err, tc.want)
			}
		}
		if c := tok.Calls(softtoken.OpSignDigest); c != 0 {
			t.Errorf("%d SignDigest calls for refused batches", c)
		}
	})
}

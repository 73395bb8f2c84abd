package hsm

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/hsmtest"
)

// sessionRecorder records the session and the data of every C_Sign that
// reaches the module, and corrupts the signature of call corrupt (1-based;
// 0: none).
type sessionRecorder struct {
	*hsmtest.Faults
	mu       sync.Mutex
	sessions []pkcs11.SessionHandle
	data     [][]byte
	corrupt  int
}

func (r *sessionRecorder) Sign(sh pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	sig, err := r.Faults.Sign(sh, msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.sessions = append(r.sessions, sh)
		r.data = append(r.data, bytes.Clone(msg))
		if len(r.data) == r.corrupt {
			sig[len(sig)/2] ^= 1
		}
	}
	return sig, err
}

// signed returns the sessions and data of the successful C_Sign calls so
// far and forgets them.
func (r *sessionRecorder) signed() ([]pkcs11.SessionHandle, [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, d := r.sessions, r.data
	r.sessions, r.data, r.corrupt = nil, nil, 0
	return s, d
}

// openRecorded opens a Token on mainTok whose module calls go through a
// sessionRecorder.
func openRecorded(t *testing.T) (*Token, *sessionRecorder) {
	t.Helper()
	rec := &sessionRecorder{}
	cfg := config(mainTok)
	cfg.Wrap = func(real Ctx) Ctx {
		rec.Faults = hsmtest.Wrap(real)
		return rec
	}
	return openTest(t, cfg, options{}), rec
}

// batchDigests returns n distinct digests of h.
func batchDigests(h crypto.Hash, name string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = digestOf(h, fmt.Appendf(nil, "%s %d", name, i))
	}
	return out
}

// TestSignDigestsOneSession: a batch is signed in request order with one
// session, each signature verified by Go's crypto and OpenSSL.
func TestSignDigestsOneSession(t *testing.T) {
	tok, rec := openRecorded(t)
	rsaKey := func(testing.TB) *KeyInfo { return sharedKey }
	ec := func(curve string) func(testing.TB) *KeyInfo {
		return func(t testing.TB) *KeyInfo { return ecKey(t, curve) }
	}
	pss := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}
	// The longest salt the key allows, as pyHanko asks: 222 bytes for
	// RSA-2048 and SHA-256.
	maxSalt := MaxPSSSaltLength(sharedKey.Public.(*rsa.PublicKey), crypto.SHA256)
	pssMax := &rsa.PSSOptions{SaltLength: maxSalt, Hash: crypto.SHA256}
	cases := []struct {
		name, hash string
		key        func(testing.TB) *KeyInfo
		opts       crypto.SignerOpts
	}{
		{"PKCS#1 v1.5 SHA-256", "sha256", rsaKey, crypto.SHA256},
		{"PSS SHA-256", "sha256", rsaKey, pss},
		{"PSS SHA-256 longest salt", "sha256", rsaKey, pssMax},
		{"ECDSA P-256", "sha256", ec("P-256"), crypto.SHA256},
		{"ECDSA P-384 SHA-384", "sha384", ec("P-384"), crypto.SHA384},
		{"ECDSA P-521 SHA-512", "sha512", ec("P-521"), crypto.SHA512},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := c.key(t)
			if _, ok := c.opts.(*rsa.PSSOptions); ok {
				mechanism(t, pkcs11.CKM_RSA_PKCS_PSS, "CKM_RSA_PKCS_PSS", 2048)
			}
			digests := batchDigests(c.opts.HashFunc(), c.name, 5)
			sigs, err := tok.SignDigests(context.Background(), key.ID, c.opts, digests)
			if err != nil {
				lacksIfUnsupported(t, c.name, err)
				t.Fatal(err)
			}
			sessions, _ := rec.signed()
			if len(sigs) != len(digests) || len(sessions) != len(digests) {
				t.Fatalf("%d signatures, %d C_Sign calls for %d digests", len(sigs), len(sessions), len(digests))
			}
			for i, s := range sessions {
				if s != sessions[0] {
					t.Fatalf("C_Sign %d on session %d, the first on %d: not one session", i, s, sessions[0])
				}
			}
			p, isPSS := c.opts.(*rsa.PSSOptions)
			for i, sig := range sigs {
				var err error
				switch pub := key.Public.(type) {
				case *rsa.PublicKey:
					if isPSS {
						salt := p.SaltLength
						if salt == rsa.PSSSaltLengthEqualsHash {
							salt = p.Hash.Size()
						}
						err = rsa.VerifyPSS(pub, c.opts.HashFunc(), digests[i], sig, &rsa.PSSOptions{SaltLength: salt})
					} else {
						err = rsa.VerifyPKCS1v15(pub, c.opts.HashFunc(), digests[i], sig)
					}
				case *ecdsa.PublicKey:
					if !ecdsa.VerifyASN1(pub, digests[i], sig) {
						err = errors.New("ECDSA verification failed")
					}
				}
				if err != nil {
					t.Fatalf("signature %d (request order): %v", i, err)
				}
				if c.opts != pssMax { // opensslVerify expects the hash length
					opensslVerify(t, key.Public, c.hash, isPSS, digests[i], sig)
				}
			}
		})
	}
}

// TestSignDigestsFailureAt: a failure at signature k of N returns no
// signature; it is NotSigned only when k is the first, since after it
// signatures of the batch exist.
func TestSignDigestsFailureAt(t *testing.T) {
	tok, rec := openRecorded(t)
	const n = 5
	for _, method := range []string{"SignInit", "Sign"} {
		for _, k := range []int{0, 1, n - 1} {
			t.Run(fmt.Sprintf("%s fails at %d of %d", method, k, n), func(t *testing.T) {
				rec.signed()
				calls := 0
				rec.Hook(func(m string) error {
					if m != method {
						return nil
					}
					if calls++; calls == k+1 {
						return pkcs11.Error(pkcs11.CKR_FUNCTION_FAILED)
					}
					return nil
				})
				defer rec.Hook(nil)
				sigs, err := tok.SignDigests(context.Background(), sharedKey.ID, crypto.SHA256, batchDigests(crypto.SHA256, t.Name(), n))
				if err == nil || sigs != nil {
					t.Fatalf("SignDigests = %d signatures, %v; want an error and none", len(sigs), err)
				}
				if got, want := NotSigned(err), k == 0; got != want {
					t.Fatalf("NotSigned(%v) = %v, want %v", err, got, want)
				}
				if sessions, _ := rec.signed(); len(sessions) != k {
					t.Fatalf("%d signatures made before the failure, want %d", len(sessions), k)
				}
				if k > 0 && !strings.Contains(err.Error(), fmt.Sprintf("after %d of %d signatures", k, n)) {
					t.Fatalf("error %q does not say how far the batch went", err)
				}
			})
		}
	}
}

// TestSignDigestsSessionLost: a session lost in the middle of a batch is
// replaced and the batch goes on where it stopped: no digest is signed
// twice, and the signatures are all there in order.
func TestSignDigestsSessionLost(t *testing.T) {
	tok, rec := openRecorded(t)
	const n, k = 5, 2
	calls := 0
	rec.Hook(func(m string) error {
		if m != "Sign" {
			return nil
		}
		if calls++; calls == k+1 {
			return pkcs11.Error(pkcs11.CKR_SESSION_HANDLE_INVALID)
		}
		return nil
	})
	defer rec.Hook(nil)
	digests := batchDigests(crypto.SHA256, t.Name(), n)
	sigs, err := tok.SignDigests(context.Background(), sharedKey.ID, crypto.SHA256, digests)
	if err != nil {
		t.Fatal(err)
	}
	_, data := rec.signed()
	if len(data) != n {
		t.Fatalf("%d digests signed for %d: one signed twice or lost", len(data), n)
	}
	for i, d := range data {
		if !bytes.HasSuffix(d, digests[i]) {
			t.Fatalf("C_Sign %d signed digest out of order or twice", i)
		}
		if err := rsa.VerifyPKCS1v15(sharedKey.Public.(*rsa.PublicKey), crypto.SHA256, digests[i], sigs[i]); err != nil {
			t.Fatalf("signature %d: %v", i, err)
		}
	}
}

// TestSignDigestsVerifies: a corrupted signature anywhere in the batch
// stops it; nothing leaves, and it counts as made (not NotSigned).
func TestSignDigestsVerifies(t *testing.T) {
	tok, rec := openRecorded(t)
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("signature %d of 3 corrupted", k), func(t *testing.T) {
			rec.mu.Lock()
			rec.corrupt = k
			rec.mu.Unlock()
			sigs, err := tok.SignDigests(context.Background(), sharedKey.ID, crypto.SHA256, batchDigests(crypto.SHA256, t.Name(), 3))
			rec.signed()
			if err == nil || sigs != nil || NotSigned(err) || !strings.Contains(err.Error(), "invalid signature") {
				t.Fatalf("SignDigests = %d signatures, %v (NotSigned %v)", len(sigs), err, NotSigned(err))
			}
		})
	}
}

// TestSignDigestsRejects: a batch with any bad digest, or none, is refused
// before the token is asked anything.
func TestSignDigestsRejects(t *testing.T) {
	tok, rec := openRecorded(t)
	good := batchDigests(crypto.SHA256, t.Name(), 3)
	tests := []struct {
		name    string
		opts    crypto.SignerOpts
		digests [][]byte
		want    error
	}{
		{"none", crypto.SHA256, nil, ErrBadDigest},
		{"last digest short", crypto.SHA256, append(good[:2:2], good[2][:31]), ErrBadDigest},
		{"SHA-1", crypto.SHA1, [][]byte{good[0][:20]}, ErrUnsupportedAlgorithm},
		{"PSS salt 20", &rsa.PSSOptions{SaltLength: 20, Hash: crypto.SHA256}, good, ErrUnsupportedAlgorithm},
		{"PSS salt between the hash length and the key's maximum", &rsa.PSSOptions{SaltLength: 100, Hash: crypto.SHA256}, good, ErrUnsupportedAlgorithm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sigs, err := tok.SignDigests(context.Background(), sharedKey.ID, tt.opts, tt.digests)
			if !errors.Is(err, tt.want) || !NotSigned(err) || sigs != nil {
				t.Fatalf("SignDigests: %v (NotSigned %v, %d signatures), want %v", err, NotSigned(err), len(sigs), tt.want)
			}
			if n := rec.Calls("SignInit"); n != 0 {
				t.Fatalf("the token was asked to sign %d times", n)
			}
		})
	}
}

package csc_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
)

// tpmLike is a Signer whose token signs no RSASSA-PSS with the longest
// salt (tpm2-pkcs11 1.9 refuses it with CKR_MECHANISM_PARAM_INVALID) and,
// with noPSS, none at all (a token without CKM_RSA_PKCS_PSS); it says so
// before anything is spent, as *hsm.Token.CheckSign does.
type tpmLike struct {
	*softtoken.Token
	noPSS  bool
	checks atomic.Int32
}

func (s *tpmLike) SignsPSS() bool { return !s.noPSS }

func (s *tpmLike) CheckSign(ctx context.Context, id []byte, opts crypto.SignerOpts) error {
	s.checks.Add(1)
	if p, ok := opts.(*rsa.PSSOptions); ok && (s.noPSS || p.SaltLength > p.Hash.Size()) {
		return hsm.MarkNotSigned(fmt.Errorf("hsm: check key: %w: token \"tpm\" refused RSASSA-PSS with a %d-byte salt", hsm.ErrUnsupportedAlgorithm, p.SaltLength))
	}
	return s.CheckKey(ctx, id)
}

// TestTokenAlgorithms: credentials/info lists RSASSA-PSS only when the
// token signs it, and a PSS salt the token refuses is answered as a CSC
// error naming signAlgo before the SAD is spent.
func TestTokenAlgorithms(t *testing.T) {
	t.Run("credentials/info", func(t *testing.T) {
		for _, tc := range []struct {
			noPSS bool
			algo  string
		}{
			{false, "[" + rsaEnc + " " + sha256R + " " + sha384R + " " + sha512R + " " + pssO + "]"},
			{true, "[" + rsaEnc + " " + sha256R + " " + sha384R + " " + sha512R + "]"},
		} {
			e := newEnv(t, withSigner(&tpmLike{Token: token, noPSS: tc.noPSS}))
			cred := e.credential(valid("alice", keyA))
			r := e.call("credentials/info", e.accessToken("alice", "rp1"), body("credentialID", cred))
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			if got := fmt.Sprint(r.body["key"].(map[string]any)["algo"]); got != tc.algo {
				t.Errorf("no PSS %v: key.algo %s, want %s", tc.noPSS, got, tc.algo)
			}
		}
	})
	t.Run("signHash", func(t *testing.T) {
		s := &tpmLike{Token: token}
		e := newEnv(t, withSigner(s))
		bearer := e.accessToken("alice", "rp1")
		cred := e.credential(valid("alice", keyA)) // RSA-2048
		for _, tc := range []struct {
			salt int
			ok   bool
		}{{32, true}, {222, false}} {
			d := hashOf(crypto.SHA256, fmt.Sprint(tc.salt))
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			before := s.checks.Load()
			r := e.call("signatures/signHash", bearer, body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)},
				"signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, tc.salt, 0)))
			if s.checks.Load() == before {
				t.Fatal("the preflight did not ask the Signer about the scheme")
			}
			if tc.ok {
				if len(signatures(t, r)) != 1 {
					t.Fatalf("salt %d: %s", tc.salt, r.raw)
				}
				continue
			}
			wantError(t, r, http.StatusBadRequest, "invalid_request",
				"Invalid parameter signAlgo: the signing device cannot make this algorithm with this credential's key")
			if !e.sadExists(sad) {
				t.Fatal("the refusal consumed the SAD")
			}
		}
	})
}

package csc_test

import (
	"crypto"
	"crypto/rsa"
	"net/http"
	"testing"
	"time"
)

// TestSignHashPSSLongestSalt: RSASSA-PSS with the longest salt the key
// allows (modulus bytes − hash length − 2, what pyHanko's prefer_pss asks)
// signs; any other salt longer than the hash is refused before the SAD is
// consumed.
func TestSignHashPSSLongestSalt(t *testing.T) {
	e := newEnv(t)
	bearer := e.accessToken("alice", "rp1")
	cred := e.credential(valid("alice", keyA)) // RSA-2048
	for _, tc := range []struct {
		name string
		hash crypto.Hash
		oid  string
		salt int
		desc string // "" signs
	}{
		{"SHA-256, 222 bytes", crypto.SHA256, sha256O, 222, ""},
		{"SHA-512, 190 bytes", crypto.SHA512, sha512O, 190, ""},
		{"SHA-256, 100 bytes", crypto.SHA256, sha256O, 100, "Invalid parameter signAlgoParams: the salt length must equal the hash length"},
		{"SHA-256, 223 bytes", crypto.SHA256, sha256O, 223, "Invalid parameter signAlgoParams: the salt length must equal the hash length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := hashOf(tc.hash, tc.name)
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			r := e.call("signatures/signHash", bearer, body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)},
				"signAlgo", pssO, "signAlgoParams", pssParams(t, tc.oid, mgf1O, tc.oid, tc.salt, 0)))
			if tc.desc != "" {
				wantError(t, r, http.StatusBadRequest, "invalid_request", tc.desc)
				if !e.sadExists(sad) {
					t.Fatal("the refusal consumed the SAD")
				}
				return
			}
			sigs := signatures(t, r)
			if len(sigs) != 1 {
				t.Fatalf("%d signatures", len(sigs))
			}
			if err := rsa.VerifyPSS(keyA.Public.(*rsa.PublicKey), tc.hash, d, sigs[0], &rsa.PSSOptions{SaltLength: tc.salt}); err != nil {
				t.Fatalf("not a PSS signature with a %d-byte salt: %v", tc.salt, err)
			}
		})
	}
}

package csc_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
)

const (
	pssO      = "1.2.840.113549.1.1.10"
	sha384R   = "1.2.840.113549.1.1.12"
	sha512R   = "1.2.840.113549.1.1.13"
	ecdsa256  = "1.2.840.10045.4.3.2"
	ecdsa384  = "1.2.840.10045.4.3.3"
	ecdsa512  = "1.2.840.10045.4.3.4"
	sha384O   = "2.16.840.1.101.3.4.2.2"
	sha512O   = "2.16.840.1.101.3.4.2.3"
	mgf1O     = "1.2.840.113549.1.1.8"
	derNull64 = "BQA="
)

// ecKeys are EC keys in the shared software token, made once.
var ecKeys = sync.OnceValues(func() ([3]*hsm.KeyInfo, error) {
	var out [3]*hsm.KeyInfo
	var err error
	if out[0], err = token.GenerateEC(context.Background(), "csc-ec256", elliptic.P256()); err != nil {
		return out, err
	}
	if out[1], err = token.GenerateEC(context.Background(), "csc-ec384", elliptic.P384()); err != nil {
		return out, err
	}
	out[2], err = token.GenerateEC(context.Background(), "csc-ec521", elliptic.P521())
	return out, err
})

func ecKey(t testing.TB, bits int) *hsm.KeyInfo {
	t.Helper()
	keys, err := ecKeys()
	if err != nil {
		t.Fatal(err)
	}
	switch bits {
	case 384:
		return keys[1]
	case 521:
		return keys[2]
	}
	return keys[0]
}

// hashOf hashes s with h (SHA-256, SHA-384 or SHA-512).
func hashOf(h crypto.Hash, s string) []byte {
	d := h.New()
	d.Write([]byte(s))
	return d.Sum(nil)
}

// pssParams is base64 DER RSASSA-PSS-params with hash, MGF1 over mgfHash
// and salt; trailer 0 leaves the trailer field out (its default, 1).
func pssParams(t testing.TB, hash, mgf, mgfHash string, salt, trailer int) string {
	t.Helper()
	oid := func(s string) asn1.ObjectIdentifier {
		var o asn1.ObjectIdentifier
		var n int
		for _, c := range s + "." {
			if c == '.' {
				o, n = append(o, n), 0
				continue
			}
			n = n*10 + int(c-'0')
		}
		return o
	}
	null := asn1.RawValue{Tag: asn1.TagNull}
	mh, err := asn1.Marshal(pkix.AlgorithmIdentifier{Algorithm: oid(mgfHash), Parameters: null})
	if err != nil {
		t.Fatal(err)
	}
	type params struct {
		Hash    pkix.AlgorithmIdentifier `asn1:"explicit,tag:0"`
		MGF     pkix.AlgorithmIdentifier `asn1:"explicit,tag:1"`
		Salt    int                      `asn1:"explicit,tag:2"`
		Trailer int                      `asn1:"optional,explicit,tag:3"`
	}
	der, err := asn1.Marshal(params{
		Hash: pkix.AlgorithmIdentifier{Algorithm: oid(hash), Parameters: null},
		MGF:  pkix.AlgorithmIdentifier{Algorithm: oid(mgf), Parameters: asn1.RawValue{FullBytes: mh}},
		Salt: salt, Trailer: trailer,
	})
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// TestSignHashAlgorithms signs with every algorithm through the router and
// verifies each signature with Go's crypto against the credential's
// certificate.
func TestSignHashAlgorithms(t *testing.T) {
	e := newEnv(t)
	bearer := e.accessToken("alice", "rp1")
	ec256, ec384, ec521 := ecKey(t, 256), ecKey(t, 384), ecKey(t, 521)
	creds := map[*hsm.KeyInfo]string{}
	for _, k := range []*hsm.KeyInfo{keyA, ec256, ec384, ec521} {
		creds[k] = e.credential(valid("alice", k))
	}
	pss256 := pssParams(t, sha256O, mgf1O, sha256O, 32, 0)
	pss384 := pssParams(t, sha384O, mgf1O, sha384O, 48, 1)
	pss512 := pssParams(t, sha512O, mgf1O, sha512O, 64, 0)
	rows := []struct {
		name string
		key  *hsm.KeyInfo
		hash crypto.Hash
		kv   []any
		pss  bool
	}{
		{"rsaEncryption SHA-384", keyA, crypto.SHA384, []any{"signAlgo", rsaEnc, "hashAlgo", sha384O}, false},
		{"rsaEncryption SHA-512", keyA, crypto.SHA512, []any{"signAlgo", rsaEnc, "hashAlgo", sha512O}, false},
		{"sha256WithRSA", keyA, crypto.SHA256, []any{"signAlgo", sha256R}, false},
		{"sha384WithRSA", keyA, crypto.SHA384, []any{"signAlgo", sha384R, "signAlgoParams", derNull64}, false},
		{"sha512WithRSA with hashAlgo", keyA, crypto.SHA512, []any{"signAlgo", sha512R, "hashAlgo", sha512O}, false},
		{"PSS SHA-256", keyA, crypto.SHA256, []any{"signAlgo", pssO, "signAlgoParams", pss256}, true},
		{"PSS SHA-384 with hashAlgo, trailer written", keyA, crypto.SHA384, []any{"signAlgo", pssO, "signAlgoParams", pss384, "hashAlgo", sha384O}, true},
		{"PSS SHA-512", keyA, crypto.SHA512, []any{"signAlgo", pssO, "signAlgoParams", pss512}, true},
		{"ECDSA P-256 SHA-256", ec256, crypto.SHA256, []any{"signAlgo", ecdsa256}, false},
		{"ECDSA P-256 SHA-384", ec256, crypto.SHA384, []any{"signAlgo", ecdsa384, "hashAlgo", sha384O}, false},
		{"ECDSA P-384 SHA-384", ec384, crypto.SHA384, []any{"signAlgo", ecdsa384, "signAlgoParams", ""}, false},
		{"ECDSA P-384 SHA-512", ec384, crypto.SHA512, []any{"signAlgo", ecdsa512}, false},
		{"ECDSA P-521 SHA-512", ec521, crypto.SHA512, []any{"signAlgo", ecdsa512, "hashAlgo", sha512O}, false},
		{"ECDSA P-521 SHA-256", ec521, crypto.SHA256, []any{"signAlgo", ecdsa256}, false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			cred := creds[row.key]
			d := hashOf(row.hash, row.name)
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			r := e.call("signatures/signHash", bearer, body(append([]any{"credentialID", cred, "SAD", sad, "hash", []string{b64(d)}}, row.kv...)...))
			sigs := signatures(t, r)
			if len(sigs) != 1 {
				t.Fatalf("%d signatures", len(sigs))
			}
			leaf, err := x509.ParseCertificate(e.creds[cred].Chain[0])
			if err != nil {
				t.Fatal(err)
			}
			switch pub := leaf.PublicKey.(type) {
			case *rsa.PublicKey:
				if row.pss {
					err = rsa.VerifyPSS(pub, row.hash, d, sigs[0], &rsa.PSSOptions{SaltLength: row.hash.Size(), Hash: row.hash})
				} else {
					err = rsa.VerifyPKCS1v15(pub, row.hash, d, sigs[0])
				}
			case *ecdsa.PublicKey:
				if !ecdsa.VerifyASN1(pub, d, sigs[0]) {
					err = fmt.Errorf("ECDSA signature %x does not verify (DER expected)", sigs[0])
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSignHashWrongKeyAlgo: a signAlgo the credential's key cannot do is
// refused before the SAD is looked at; the SAD then still signs.
func TestSignHashWrongKeyAlgo(t *testing.T) {
	e := newEnv(t)
	bearer := e.accessToken("alice", "rp1")
	rsaCred := e.credential(valid("alice", keyA))
	ecCred := e.credential(valid("alice", ecKey(t, 256)))
	for _, tc := range []struct {
		name, cred, wrong, right, desc string
	}{
		{"ECDSA on RSA", rsaCred, ecdsa256, sha256R, "Invalid parameter signAlgo: the credential's key is RSA"},
		{"RSA on EC", ecCred, sha256R, ecdsa256, "Invalid parameter signAlgo: the credential's key is EC"},
		{"rsaEncryption on EC", ecCred, rsaEnc, ecdsa256, "Invalid parameter signAlgo: the credential's key is EC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := digest(tc.name)
			sad := e.sad("alice", "rp1", tc.cred, 5*time.Minute, d)
			r := e.call("signatures/signHash", bearer, body("credentialID", tc.cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", tc.wrong, "hashAlgo", sha256O))
			wantError(t, r, http.StatusBadRequest, "invalid_request", tc.desc)
			if !e.sadExists(sad) {
				t.Fatal("the refusal consumed the SAD")
			}
			r = e.call("signatures/signHash", bearer, body("credentialID", tc.cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", tc.right, "hashAlgo", sha256O))
			if len(signatures(t, r)) != 1 {
				t.Fatal("no signature with the right algorithm")
			}
		})
	}
}

// TestCredentialInfoKeyAlgos: key.algo, key.len and key.curve follow the
// key type.
func TestCredentialInfoKeyAlgos(t *testing.T) {
	e := newEnv(t)
	bearer := e.accessToken("alice", "rp1")
	for _, tc := range []struct {
		key   *hsm.KeyInfo
		algo  string
		len   float64
		curve any
	}{
		{keyA, "[" + rsaEnc + " " + sha256R + " " + sha384R + " " + sha512R + " " + pssO + "]", 2048, nil},
		{ecKey(t, 256), "[" + ecdsa256 + " " + ecdsa384 + " " + ecdsa512 + "]", 256, "1.2.840.10045.3.1.7"},
		{ecKey(t, 384), "[" + ecdsa256 + " " + ecdsa384 + " " + ecdsa512 + "]", 384, "1.3.132.0.34"},
		{ecKey(t, 521), "[" + ecdsa256 + " " + ecdsa384 + " " + ecdsa512 + "]", 521, "1.3.132.0.35"},
	} {
		cred := e.credential(valid("alice", tc.key))
		r := e.call("credentials/info", bearer, body("credentialID", cred))
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		key := r.body["key"].(map[string]any)
		if fmt.Sprint(key["algo"]) != tc.algo || key["len"] != tc.len || key["curve"] != tc.curve {
			t.Errorf("key = %v, want algo %s len %v curve %v", key, tc.algo, tc.len, tc.curve)
		}
	}
}

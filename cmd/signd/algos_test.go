package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
	softhsmtest "github.com/signd/signd/softhsm-test"
)

// PSS parameter sets (base64 DER RSASSA-PSS-params: hash, MGF1 with the
// same hash, salt = hash length), as pyHanko sends them.
const (
	pssSHA256 = "MDSgDzANBglghkgBZQMEAgEFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgEFAKIDAgEg"
	pssSHA384 = "MDSgDzANBglghkgBZQMEAgIFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgIFAKIDAgEw"
	pssSHA512 = "MDSgDzANBglghkgBZQMEAgMFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgMFAKIDAgFA"
	// pssSHA256Salt20 is pssSHA256 with a salt of 20 bytes.
	pssSHA256Salt20 = "MDSgDzANBglghkgBZQMEAgEFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgEFAKIDAgEU"
)

// enrollKeyType creates a credential for user with the key type flag
// (--key-type or --algo) through the CLI and imports a chain for it.
func enrollKeyType(t *testing.T, e *env, user, flag, keyType string) string {
	t.Helper()
	return enrollKey(t, e, user, "CN="+user+" "+keyType+",O=Example BV", flag, keyType)
}

// TestSignAlgorithmsEndToEnd enrolls RSA and EC credentials through the
// CLI in the real SoftHSM2 token, authorizes each hash through the real
// OAuth flows of the daemon (bbolt file, Echo router) and signs it with
// every algorithm; each signature is verified by Go's crypto and by
// `openssl pkeyutl -verify`.
func TestSignAlgorithmsEndToEnd(t *testing.T) {
	e := newEnv(t, "")
	rsaCred := journeyAlice(t, e) // rsa-2048, the default
	ec256 := enrollKeyType(t, e, "alice", "--key-type", "ec-p256")
	ec384 := enrollKeyType(t, e, "alice", "--algo", "ec-p384") // the older flag name
	rsa3072 := enrollKeyType(t, e, "alice", "--key-type", "rsa-3072")
	ec521 := enrollKeyType(t, e, "alice", "--key-type", "ec-p521")
	if out := e.must("", "credential", "show", ec384); !strings.Contains(out, "ec-p384 (384 bits)") {
		t.Errorf("credential show: %s", out)
	}
	if out := e.must("", "credential", "show", ec521); !strings.Contains(out, "ec-p521 (521 bits)") {
		t.Errorf("credential show: %s", out)
	}
	addr, _ := e.startDaemon()
	base := "http://" + addr
	flow := oauthFlow(t, base)
	service := flow("service", "state-service")

	// signHash hashes "%PDF-1.7 "+doc with h, runs the credential flow for
	// that digest and posts signHash with the request members extra; it
	// returns the digest, the SAD and the answer.
	signHash := func(t *testing.T, cred string, h crypto.Hash, doc string, extra map[string]any) ([]byte, string, int, map[string]any) {
		t.Helper()
		digest := hashOf(h, "%PDF-1.7 "+doc)
		sad := credentialFlow(flow, cred, digest)
		req := map[string]any{"credentialID": cred, "SAD": sad, "hash": []string{base64.StdEncoding.EncodeToString(digest)}}
		maps.Copy(req, extra)
		body, _ := json.Marshal(req)
		status, res := postJSON(t, base+"/csc/v1/signatures/signHash", service.AccessToken, string(body))
		return digest, sad, status, res
	}

	leaves := map[string][]byte{}
	for _, tc := range []struct {
		cred, algo string
		len        float64
		curve      any
	}{
		{rsaCred, "[1.2.840.113549.1.1.1 1.2.840.113549.1.1.11 1.2.840.113549.1.1.12 1.2.840.113549.1.1.13 1.2.840.113549.1.1.10]", 2048, nil},
		{rsa3072, "[1.2.840.113549.1.1.1 1.2.840.113549.1.1.11 1.2.840.113549.1.1.12 1.2.840.113549.1.1.13 1.2.840.113549.1.1.10]", 3072, nil},
		{ec256, "[1.2.840.10045.4.3.2 1.2.840.10045.4.3.3 1.2.840.10045.4.3.4]", 256, "1.2.840.10045.3.1.7"},
		{ec384, "[1.2.840.10045.4.3.2 1.2.840.10045.4.3.3 1.2.840.10045.4.3.4]", 384, "1.3.132.0.34"},
		{ec521, "[1.2.840.10045.4.3.2 1.2.840.10045.4.3.3 1.2.840.10045.4.3.4]", 521, "1.3.132.0.35"},
	} {
		status, info := postJSON(t, base+"/csc/v1/credentials/info", service.AccessToken, `{"credentialID":"`+tc.cred+`"}`)
		key, _ := info["key"].(map[string]any)
		if status != 200 || fmt.Sprint(key["algo"]) != tc.algo || key["len"] != tc.len || key["curve"] != tc.curve || key["status"] != "enabled" {
			t.Fatalf("credentials/info %s: %d %v", tc.cred, status, info)
		}
		certs := info["cert"].(map[string]any)["certificates"].([]any)
		leaves[tc.cred], _ = base64.StdEncoding.DecodeString(certs[0].(string))
	}

	rows := []struct {
		name string
		cred string
		hash crypto.Hash
		req  map[string]any
		pss  bool
		ossl string // openssl digest name
	}{
		{"rsaEncryption SHA-256", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.1", "hashAlgo": "2.16.840.1.101.3.4.2.1"}, false, "sha256"},
		{"rsaEncryption SHA-512", rsaCred, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.113549.1.1.1", "hashAlgo": "2.16.840.1.101.3.4.2.3"}, false, "sha512"},
		{"sha256WithRSA", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.11"}, false, "sha256"},
		{"sha384WithRSA", rsaCred, crypto.SHA384, map[string]any{"signAlgo": "1.2.840.113549.1.1.12", "hashAlgo": "2.16.840.1.101.3.4.2.2"}, false, "sha384"},
		{"sha512WithRSA", rsa3072, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.113549.1.1.13", "signAlgoParams": "BQA="}, false, "sha512"},
		{"RSASSA-PSS SHA-256", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": pssSHA256, "hashAlgo": "2.16.840.1.101.3.4.2.1"}, true, "sha256"},
		{"RSASSA-PSS SHA-384", rsa3072, crypto.SHA384, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": pssSHA384}, true, "sha384"},
		{"RSASSA-PSS SHA-512", rsaCred, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": pssSHA512}, true, "sha512"},
		{"ECDSA P-256 SHA-256", ec256, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.10045.4.3.2"}, false, "sha256"},
		{"ECDSA P-256 SHA-512", ec256, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.10045.4.3.4", "hashAlgo": "2.16.840.1.101.3.4.2.3"}, false, "sha512"},
		{"ECDSA P-384 SHA-384", ec384, crypto.SHA384, map[string]any{"signAlgo": "1.2.840.10045.4.3.3"}, false, "sha384"},
		{"ECDSA P-384 SHA-256", ec384, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.10045.4.3.2"}, false, "sha256"},
		{"ECDSA P-521 SHA-512", ec521, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.10045.4.3.4"}, false, "sha512"},
		{"ECDSA P-521 SHA-384", ec521, crypto.SHA384, map[string]any{"signAlgo": "1.2.840.10045.4.3.3", "hashAlgo": "2.16.840.1.101.3.4.2.2"}, false, "sha384"},
		{"ECDSA P-521 SHA-256", ec521, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.10045.4.3.2"}, false, "sha256"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			digest, _, status, res := signHash(t, row.cred, row.hash, row.name, row.req)
			if status != 200 {
				t.Fatalf("signHash: %d %v", status, res)
			}
			sig, err := base64.StdEncoding.DecodeString(res["signatures"].([]any)[0].(string))
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(leaves[row.cred])
			if err != nil {
				t.Fatal(err)
			}
			opts := []string{"digest:" + row.ossl}
			switch pub := leaf.PublicKey.(type) {
			case *rsa.PublicKey:
				if row.pss {
					err = rsa.VerifyPSS(pub, row.hash, digest, sig, &rsa.PSSOptions{SaltLength: row.hash.Size(), Hash: row.hash})
					opts = append(opts, "rsa_padding_mode:pss", "rsa_pss_saltlen:digest", "rsa_mgf1_md:"+row.ossl)
				} else {
					err = rsa.VerifyPKCS1v15(pub, row.hash, digest, sig)
				}
			case *ecdsa.PublicKey:
				var rs struct{ R, S *big.Int }
				if rest, derr := asn1.Unmarshal(sig, &rs); derr != nil || len(rest) != 0 {
					t.Fatalf("not a DER ECDSA-Sig-Value: %x", sig)
				}
				if !ecdsa.VerifyASN1(pub, digest, sig) {
					err = fmt.Errorf("crypto/ecdsa does not verify %x", sig)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			softhsmtest.VerifyWithOpenSSLOpts(t, leaves[row.cred], digest, sig, opts...)
		})
	}

	// Hostile requests with a real SAD: refused with the exact
	// description; a refusal that comes before the SAD leaves it usable.
	hostile := []struct {
		name, cred string
		hash       crypto.Hash
		req        map[string]any
		desc       string
	}{
		{"ECDSA OID on an RSA key", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.10045.4.3.2"}, "Invalid parameter signAlgo: the credential's key is RSA"},
		{"RSA OID on an EC key", ec256, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.11"}, "Invalid parameter signAlgo: the credential's key is EC"},
		{"PSS on an EC key", ec384, crypto.SHA384, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": pssSHA384}, "Invalid parameter signAlgo: the credential's key is EC"},
		{"PSS salt 20", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": pssSHA256Salt20}, "Invalid parameter signAlgoParams: the salt length must equal the hash length"},
		{"PSS params of another hash", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": pssSHA384}, "Invalid digest value length"},
		{"PSS garbage params", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": "MIIBAAAA"}, "Invalid parameter signAlgoParams: not a base64 DER RSASSA-PSS-params"},
		{"PSS params on sha256WithRSA", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.11", "signAlgoParams": pssSHA256}, "Invalid parameter signAlgoParams"},
		{"SHA-384 digest for ecdsa-with-SHA256", ec256, crypto.SHA384, map[string]any{"signAlgo": "1.2.840.10045.4.3.2"}, "Invalid digest value length"},
		{"SHA-512 digest for ecdsa-with-SHA256 on P-521", ec521, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.10045.4.3.2"}, "Invalid digest value length"},
		{"SHA-256 digest for ecdsa-with-SHA512 on P-521", ec521, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.10045.4.3.4"}, "Invalid digest value length"},
		{"hashAlgo SHA-256 for ecdsa-with-SHA512 on P-521", ec521, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.10045.4.3.4", "hashAlgo": "2.16.840.1.101.3.4.2.1"}, "Invalid parameter hashAlgo"},
		{"RSA OID on a P-521 key", ec521, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.113549.1.1.13"}, "Invalid parameter signAlgo: the credential's key is EC"},
		{"PSS on a P-521 key", ec521, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.113549.1.1.10", "signAlgoParams": pssSHA512}, "Invalid parameter signAlgo: the credential's key is EC"},
		{"hashAlgo SHA-256 for sha512WithRSA", rsaCred, crypto.SHA512, map[string]any{"signAlgo": "1.2.840.113549.1.1.13", "hashAlgo": "2.16.840.1.101.3.4.2.1"}, "Invalid parameter hashAlgo"},
		{"unknown signAlgo", rsaCred, crypto.SHA256, map[string]any{"signAlgo": "1.2.840.113549.1.1.14"}, "Invalid parameter signAlgo"},
	}
	for _, h := range hostile {
		t.Run("hostile/"+h.name, func(t *testing.T) {
			digest, sad, status, res := signHash(t, h.cred, h.hash, "hostile "+h.name, h.req)
			if status != 400 || res["error"] != "invalid_request" || res["error_description"] != h.desc {
				t.Fatalf("signHash: %d %v, want 400 invalid_request %q", status, res, h.desc)
			}
			// The SAD is intact: the right algorithm still signs with it.
			right := map[string]any{"credentialID": h.cred, "SAD": sad, "hash": []string{base64.StdEncoding.EncodeToString(digest)}, "signAlgo": "1.2.840.113549.1.1.1",
				"hashAlgo": map[crypto.Hash]string{crypto.SHA256: "2.16.840.1.101.3.4.2.1", crypto.SHA384: "2.16.840.1.101.3.4.2.2", crypto.SHA512: "2.16.840.1.101.3.4.2.3"}[h.hash]}
			if h.cred == ec256 || h.cred == ec384 || h.cred == ec521 {
				right["signAlgo"] = map[crypto.Hash]string{crypto.SHA256: "1.2.840.10045.4.3.2", crypto.SHA384: "1.2.840.10045.4.3.3", crypto.SHA512: "1.2.840.10045.4.3.4"}[h.hash]
			}
			body, _ := json.Marshal(right)
			if status, res := postJSON(t, base+"/csc/v1/signatures/signHash", service.AccessToken, string(body)); status != 200 {
				t.Fatalf("the SAD does not sign after the refusal: %d %v", status, res)
			}
		})
	}
	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: ") {
		t.Errorf("audit verify: %q", out)
	}
}

// TestKeyTypeFlags: credential create and tsa enroll name the key type
// --key-type; --algo, the older name, still works, hidden from the help
// and with a note on stderr; both given must agree; an unknown type is
// refused with the types there are.
func TestKeyTypeFlags(t *testing.T) {
	e := newEnv(t, "")
	e.must("a long password\n", "user", "add", "bob", "--password-file", "-")
	const note = "signd: --algo is deprecated; use --key-type"
	for _, command := range [][]string{{"credential", "create", "--user", "bob"}, {"tsa", "enroll"}} {
		name := strings.Join(command[:2], " ")
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				args  []string
				bits  int    // the CSR's RSA key size when accepted
				want  string // the refusal; "" = accepted
				noted bool   // the deprecation note is due on stderr
			}{
				{name: "new name", args: []string{"--key-type", "rsa-2048"}, bits: 2048},
				{name: "old name", args: []string{"--algo", "rsa-2048"}, bits: 2048, noted: true},
				{name: "both agreeing", args: []string{"--key-type", "rsa-2048", "--algo", "rsa-2048"}, bits: 2048, noted: true},
				{name: "both disagreeing", args: []string{"--key-type", "rsa-2048", "--algo", "rsa-4096"},
					want: `--key-type "rsa-2048" and --algo "rsa-4096" disagree; give one`},
				{name: "old name disagreeing", args: []string{"--algo", "rsa-4096", "--key-type", "rsa-2048"},
					want: `--key-type "rsa-2048" and --algo "rsa-4096" disagree; give one`},
				{name: "unknown", args: []string{"--key-type", "rsa-1024"},
					want: `algorithm "rsa-1024" is not supported (rsa-2048, rsa-3072, rsa-4096, ec-p256, ec-p384, ec-p521)`},
				{name: "unknown by the old name", args: []string{"--algo", "EC-P256"}, want: `algorithm "EC-P256" is not supported`},
				{name: "empty", args: []string{"--key-type", ""}, want: "--key-type is empty: give a key type"},
				{name: "empty by the old name", args: []string{"--algo", ""}, want: "--algo is empty: give a key type"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					out, stderr, err := e.run("", append(append(slices.Clone(command), tc.args...), "--csr-out", "-")...)
					if tc.want != "" {
						if err == nil || !strings.Contains(err.Error(), tc.want) {
							t.Fatalf("%v: %v, want %q", tc.args, err, tc.want)
						}
						return
					}
					if err != nil {
						t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
					}
					block, _ := pem.Decode([]byte(out))
					if block == nil || strings.Contains(out[:strings.Index(out, "-----BEGIN")], "deprecated") {
						t.Fatalf("stdout is not the CSR and the ID: %q", out)
					}
					csr, err := x509.ParseCertificateRequest(block.Bytes)
					if err != nil {
						t.Fatal(err)
					}
					if k, ok := csr.PublicKey.(*rsa.PublicKey); !ok || k.N.BitLen() != tc.bits {
						t.Errorf("%v: key %T, want RSA-%d", tc.args, csr.PublicKey, tc.bits)
					}
					if got := strings.Contains(stderr, note); got != tc.noted {
						t.Errorf("%v: the deprecation note on stderr is %v, want %v: %q", tc.args, got, tc.noted, stderr)
					}
				})
			}
			help := e.must("", append(slices.Clone(command[:2]), "--help")...)
			if !strings.Contains(help, "--key-type") || strings.Contains(help, "--algo") {
				t.Errorf("%s --help: want --key-type and no --algo:\n%s", name, help)
			}
		})
	}
}

// oauthFlow returns a function that runs one authorization code flow of
// client rp for alice (journeyAlice) against the daemon at base.
func oauthFlow(t *testing.T, base string) func(scope, state string, params ...oauth2.AuthCodeOption) *oauth2.Token {
	conf, ctx := journeyClient(base)
	browser := oauthtest.NewBrowser(nil)
	return func(scope, state string, params ...oauth2.AuthCodeOption) *oauth2.Token {
		t.Helper()
		tok, err := conf.Exchange(ctx, loginFlow(t, browser, conf, mustLogin, scope, state, params...))
		if err != nil {
			t.Fatalf("%s: token: %v", scope, err)
		}
		return tok
	}
}

// credentialFlow runs the credential-scope flow for one digest and returns
// the SAD.
func credentialFlow(flow func(string, string, ...oauth2.AuthCodeOption) *oauth2.Token, cred string, digest []byte) string {
	return flow("credential", "state-credential",
		oneSignature(cred, digest)...).AccessToken
}

// hashOf hashes s with h (SHA-256, SHA-384 or SHA-512).
func hashOf(h crypto.Hash, s string) []byte {
	d := h.New()
	d.Write([]byte(s))
	return d.Sum(nil)
}

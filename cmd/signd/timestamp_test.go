package main

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/digitorus/timestamp"

	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/store"
)

const tsaPolicy = "1.3.6.1.4.1.99999.7.1"

var (
	oidEKU          = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidTimeStamping = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 8}
	oidCodeSigning  = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 3}
)

// ekuExt is an extended key usage extension with usages.
func ekuExt(t *testing.T, critical bool, usages ...asn1.ObjectIdentifier) pkix.Extension {
	t.Helper()
	v, err := asn1.Marshal(usages)
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: oidEKU, Critical: critical, Value: v}
}

// enrollTSA runs `signd tsa enroll` and imports a certificate from ca with
// a critical id-kp-timeStamping; it returns the key ID.
func enrollTSA(t *testing.T, e *env, ca *testCA) string {
	t.Helper()
	out := e.must("", "tsa", "enroll", "--subject", "CN=signd test TSA,O=Example BV,C=NL", "--csr-out", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	keyID := lines[len(lines)-1]
	certFile := filepath.Join(e.dir, "tsa-"+keyID+".pem")
	pemText := ca.certify(t, out, ekuExt(t, true, oidTimeStamping)) + ca.pem()
	if err := os.WriteFile(certFile, []byte(pemText), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("", "tsa", "import-cert", "--key-id", keyID, "--cert", certFile)
	return keyID
}

// TestTSAImportRefusesWrongUsage: a TSA certificate carries exactly one
// extended key usage, id-kp-timeStamping, marked critical (RFC 3161 §2.3).
func TestTSAImportRefusesWrongUsage(t *testing.T) {
	e := newEnv(t, "csc:\n  timestamp:\n    label: tsa-refuse\n")
	ca := newTestCA(t, "TSA CA")
	csr := e.must("", "tsa", "enroll", "--key-type", "rsa-2048", "--csr-out", "-")
	lines := strings.Split(strings.TrimSpace(csr), "\n")
	keyID := lines[len(lines)-1]
	for _, tc := range []struct {
		name string
		exts []pkix.Extension
		want string
	}{
		{"no extended key usage", nil, "has no extended key usage"},
		{"not critical", []pkix.Extension{ekuExt(t, false, oidTimeStamping)}, "must be critical"},
		{"code signing", []pkix.Extension{ekuExt(t, true, oidCodeSigning)}, "must be id-kp-timeStamping only"},
		{"time stamping and more", []pkix.Extension{ekuExt(t, true, oidTimeStamping, oidCodeSigning)}, "must be id-kp-timeStamping only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(e.dir, "bad.pem")
			os.WriteFile(f, []byte(ca.certify(t, csr, tc.exts...)), 0o600)
			_, _, err := e.run("", "tsa", "import-cert", "--key-id", keyID, "--cert", f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import-cert: %v, want %q", err, tc.want)
			}
		})
	}
	// Another key's certificate, and a key that does not exist.
	other := e.must("", "tsa", "enroll", "--key-type", "rsa-2048", "--csr-out", "-")
	f := filepath.Join(e.dir, "other.pem")
	os.WriteFile(f, []byte(ca.certify(t, other, ekuExt(t, true, oidTimeStamping))), 0o600)
	if _, _, err := e.run("", "tsa", "import-cert", "--key-id", keyID, "--cert", f); err == nil ||
		!strings.Contains(err.Error(), "public key is not the time-stamping key") {
		t.Errorf("another key's certificate: %v", err)
	}
	if _, _, err := e.run("", "tsa", "import-cert", "--key-id", "00112233445566778899aabbccddeeff", "--cert", f); err == nil {
		t.Error("a certificate for an unknown key was imported")
	}
	if _, _, err := e.run("", "tsa", "import-cert", "--key-id", "not-hex", "--cert", f); err == nil ||
		!strings.Contains(err.Error(), "key id must be the hex CKA_ID") {
		t.Errorf("malformed key id: %v", err)
	}
}

// The tests of this package share one token: each TSA test has a label
// of its own (csc.timestamp.label).

// TestTimestamp runs signatures/timestamp in the daemon: a token for a
// SHA-256 and a SHA-512 digest with a nonce, checked by Go and by
// `openssl ts -verify` against the test CA, the audit entry, and every
// malformed request.
func TestTimestamp(t *testing.T) {
	e := newEnv(t, "csc:\n  timestamp:\n    enabled: true\n    policy: "+tsaPolicy+"\n    accuracy: 2s\n    label: tsa-main\n")
	ca := newTestCA(t, "TSA CA")
	enrollTSA(t, e, ca)
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	bearer := e.mint(store.TokenAccess, "alice", "rp", "")
	addr, _ := e.startDaemon()
	base := "http://" + addr + "/csc/v1/"

	_, info := postJSON(t, base+"info", "", "{}")
	if ms, _ := info["methods"].([]any); !slices.Contains(ms, any("signatures/timestamp")) {
		t.Errorf("info methods %v lack signatures/timestamp", ms)
	}
	caFile := filepath.Join(e.dir, "ca.pem")
	os.WriteFile(caFile, []byte(ca.pem()), 0o600)

	d256 := sha256.Sum256([]byte("a signature value"))
	d512 := sha512.Sum512([]byte("another signature value"))
	nonce := strings.Repeat("a5", 32)
	for _, tc := range []struct {
		algo   string
		digest []byte
		nonce  string
	}{
		{"2.16.840.1.101.3.4.2.1", d256[:], nonce},
		{"2.16.840.1.101.3.4.2.3", d512[:], ""},
	} {
		body := `{"hash":"` + base64.StdEncoding.EncodeToString(tc.digest) + `","hashAlgo":"` + tc.algo + `"`
		if tc.nonce != "" {
			body += `,"nonce":"` + tc.nonce + `"`
		}
		status, res := postJSON(t, base+"signatures/timestamp", bearer, body+"}")
		if status != 200 {
			t.Fatalf("timestamp %s: %d %v", tc.algo, status, res)
		}
		der, err := base64.StdEncoding.DecodeString(res["timestamp"].(string))
		if err != nil {
			t.Fatal(err)
		}
		ts, err := timestamp.Parse(der)
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		if !slices.Equal(ts.HashedMessage, tc.digest) || ts.Policy.String() != tsaPolicy || ts.Accuracy != 2*time.Second ||
			time.Since(ts.Time) > time.Minute || ts.SerialNumber.BitLen() < 64 {
			t.Errorf("token: imprint %x policy %v accuracy %v time %v serial %v", ts.HashedMessage, ts.Policy, ts.Accuracy, ts.Time, ts.SerialNumber)
		}
		if tc.nonce != "" {
			if want, _ := new(big.Int).SetString(tc.nonce, 16); ts.Nonce == nil || ts.Nonce.Cmp(want) != 0 {
				t.Errorf("nonce %v, want %v", ts.Nonce, want)
			}
		}
		if len(ts.Certificates) != 1 || ts.Certificates[0].Subject.CommonName != "signd test TSA" {
			t.Errorf("token certificates %v", ts.Certificates)
		}
		tokFile := filepath.Join(e.dir, "token.der")
		os.WriteFile(tokFile, der, 0o600)
		out, err := exec.Command("openssl", "ts", "-verify", "-in", tokFile, "-token_in", "-digest", hex.EncodeToString(tc.digest),
			"-CAfile", caFile).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Verification: OK") {
			t.Errorf("openssl ts -verify: %v\n%s", err, out)
		}
		// The token does not verify for another digest.
		other := slices.Clone(tc.digest)
		other[0] ^= 1
		if out, err := exec.Command("openssl", "ts", "-verify", "-in", tokFile, "-token_in", "-digest", hex.EncodeToString(other),
			"-CAfile", caFile).CombinedOutput(); err == nil {
			t.Errorf("openssl ts -verify accepted another digest:\n%s", out)
		}
	}

	b64 := base64.StdEncoding.EncodeToString(d256[:])
	for _, tc := range []struct {
		name, bearer, body string
		status             int
		code, desc         string
	}{
		{"no bearer", "", `{"hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.1"}`, 401, "invalid_token", ""},
		{"hash missing", bearer, `{"hashAlgo":"2.16.840.1.101.3.4.2.1"}`, 400, "invalid_request", "Missing (or invalid type) string parameter hash"},
		{"hash not a string", bearer, `{"hash":["` + b64 + `"],"hashAlgo":"2.16.840.1.101.3.4.2.1"}`, 400, "invalid_request", "Missing (or invalid type) string parameter hash"},
		{"hash not base64", bearer, `{"hash":"***","hashAlgo":"2.16.840.1.101.3.4.2.1"}`, 400, "invalid_request", "Invalid Base64 hash string parameter"},
		{"hash 31 bytes", bearer, `{"hash":"` + base64.StdEncoding.EncodeToString(d256[:31]) + `","hashAlgo":"2.16.840.1.101.3.4.2.1"}`, 400, "invalid_request", "Invalid digest value length"},
		{"SHA-256 digest as SHA-384", bearer, `{"hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.2"}`, 400, "invalid_request", "Invalid digest value length"},
		{"hashAlgo missing", bearer, `{"hash":"` + b64 + `"}`, 400, "invalid_request", "Missing (or invalid type) string parameter hashAlgo"},
		{"hashAlgo SHA-1", bearer, `{"hash":"` + b64 + `","hashAlgo":"1.3.14.3.2.26"}`, 400, "invalid_request", "Invalid parameter hashAlgo"},
		{"hashAlgo unknown", bearer, `{"hash":"` + b64 + `","hashAlgo":"1.2.3"}`, 400, "invalid_request", "Invalid parameter hashAlgo"},
		{"nonce not hex", bearer, `{"hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.1","nonce":"xyz"}`, 400, "invalid_request", "Invalid parameter nonce"},
		{"nonce empty", bearer, `{"hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.1","nonce":""}`, 400, "invalid_request", "Invalid parameter nonce"},
		{"nonce a number", bearer, `{"hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.1","nonce":12}`, 400, "invalid_request", "Missing (or invalid type) string parameter nonce"},
		{"nonce oversized", bearer, `{"hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.1","nonce":"` + strings.Repeat("ab", 65) + `"}`, 400, "invalid_request", "Invalid parameter nonce"},
		{"hash duplicated", bearer, `{"hash":"` + b64 + `","hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.1"}`, 400, "invalid_request", ""},
		{"clientData a number", bearer, `{"hash":"` + b64 + `","hashAlgo":"2.16.840.1.101.3.4.2.1","clientData":1}`, 400, "invalid_request", "Invalid parameter clientData"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, res := postJSON(t, base+"signatures/timestamp", tc.bearer, tc.body)
			if status != tc.status || res["error"] != tc.code || tc.desc != "" && res["error_description"] != tc.desc {
				t.Errorf("%d %v, want %d %s %q", status, res, tc.status, tc.code, tc.desc)
			}
			if _, ok := res["timestamp"]; ok {
				t.Error("a refused request got a token")
			}
		})
	}

	// One audit entry per token, with the digest and serial number.
	export := e.must("", "audit", "export")
	var stamps []map[string]any
	for _, ent := range logtest.Records(t, export) {
		if ent["kind"] == "timestamp" {
			stamps = append(stamps, ent)
		}
	}
	if len(stamps) != 2 || stamps[0]["outcome"] != "granted" || stamps[0]["user"] != "alice" ||
		stamps[0]["hashes"].([]any)[0] != hex.EncodeToString(d256[:]) || !strings.HasPrefix(stamps[0]["reason"].(string), "serial ") {
		t.Errorf("timestamp audit entries: %v", stamps)
	}
	if strings.Contains(export, bearer) {
		t.Error("the audit log holds the bearer token")
	}
}

// TestTimestampNotEnrolledOrDisabled: enabled without a TSA certificate,
// the method answers a clear server_error (and the daemon says why at
// start); disabled, it answers 501 and info does not list it.
func TestTimestampNotEnrolledOrDisabled(t *testing.T) {
	body := `{"hash":"` + base64.StdEncoding.EncodeToString(make([]byte, 32)) + `","hashAlgo":"2.16.840.1.101.3.4.2.1"}`
	t.Run("not enrolled", func(t *testing.T) {
		e := newEnv(t, "csc:\n  timestamp:\n    enabled: true\n    policy: "+tsaPolicy+"\n    label: tsa-none\n")
		e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
		e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
		bearer := e.mint(store.TokenAccess, "alice", "rp", "")
		// A key without a certificate is not enough.
		e.must("", "tsa", "enroll", "--key-type", "rsa-2048")
		addr, logs := e.daemon()
		status, res := postJSON(t, "http://"+addr+"/csc/v1/signatures/timestamp", bearer, body)
		if status != 500 || res["error"] != "server_error" || res["error_description"] != "The time-stamping authority has no usable key and certificate" {
			t.Errorf("timestamp without a TSA certificate: %d %v", status, res)
		}
		if !strings.Contains(logs.String(), "signd tsa import-cert") {
			t.Errorf("the log does not say how to enrol the TSA:\n%s", logs)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		e := newEnv(t, "")
		e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
		e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
		bearer := e.mint(store.TokenAccess, "alice", "rp", "")
		addr, _ := e.startDaemon()
		status, res := postJSON(t, "http://"+addr+"/csc/v1/signatures/timestamp", bearer, body)
		if status != 501 || res["error"] != "not_implemented" {
			t.Errorf("timestamp while disabled: %d %v", status, res)
		}
		_, info := postJSON(t, "http://"+addr+"/csc/v1/info", "", "{}")
		if ms, _ := info["methods"].([]any); slices.Contains(ms, any("signatures/timestamp")) {
			t.Errorf("info lists signatures/timestamp while disabled: %v", ms)
		}
	})
}

// TestTimestampCertRevoked: with csc.cert_status enabled the TSA
// certificate's revocation is checked as a credential's is: a token is
// served while its chain is answered valid, and refused with the error of
// a TSA without a usable certificate once the CA revokes it.
func TestTimestampCertRevoked(t *testing.T) {
	e := newEnv(t, "csc:\n  cert_status:\n    refresh: 1s\n    timeout: 2s\n  timestamp:\n    enabled: true\n    policy: "+tsaPolicy+"\n    label: tsa-revoked\n")
	ca := certstatustest.New(t, "TSA CA", nil)
	out := e.must("", "tsa", "enroll", "--key-type", "rsa-2048", "--csr-out", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	keyID := lines[len(lines)-1]
	csr := parseCSR(t, out)
	leaf := ca.Issue(t, csr.PublicKey, certstatustest.Leaf{Subject: csr.Subject, CRL: true,
		ExtraExtensions: []pkix.Extension{ekuExt(t, true, oidTimeStamping)}})
	certFile := filepath.Join(e.dir, "tsa-chain.pem")
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})...)
	if err := os.WriteFile(certFile, chain, 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("", "tsa", "import-cert", "--key-id", keyID, "--cert", certFile)
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	bearer := e.mint(store.TokenAccess, "alice", "rp", "")
	addr, _ := e.startDaemon()
	body := `{"hash":"` + base64.StdEncoding.EncodeToString(make([]byte, 32)) + `","hashAlgo":"2.16.840.1.101.3.4.2.1"}`
	// waitAnswer polls signatures/timestamp until it answers status (the
	// status is refreshed every second).
	waitAnswer := func(want int) map[string]any {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			status, res := postJSON(t, "http://"+addr+"/csc/v1/signatures/timestamp", bearer, body)
			if status == want {
				return res
			}
			if time.Now().After(deadline) {
				t.Fatalf("signatures/timestamp: %d %v, want %d", status, res["error_description"], want)
			}
		}
	}
	waitAnswer(200)
	if ca.Fetches("/crl") == 0 {
		t.Error("the TSA certificate's CRL was never fetched")
	}
	ca.Revoke(leaf.SerialNumber, 1)
	waitFetches(ca, "/crl", 2)
	if res := waitAnswer(500); res["error"] != "server_error" || res["error_description"] != "The time-stamping authority has no usable key and certificate" {
		t.Errorf("timestamp with a revoked TSA certificate: %v", res)
	}
}

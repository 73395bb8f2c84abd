package softhsmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// VerifyWithOpenSSL checks an RSA PKCS#1 v1.5 signature over a SHA-256
// digest with the openssl command line and the public key of the DER
// certificate, so signatures made in the HSM are checked by a second,
// independent implementation. It fails t when openssl is missing or the
// signature does not verify.
func VerifyWithOpenSSL(t testing.TB, certDER, digest, sig []byte) {
	t.Helper()
	VerifyWithOpenSSLOpts(t, certDER, digest, sig, "digest:sha256")
}

// VerifyWithOpenSSLOpts is VerifyWithOpenSSL for any algorithm the
// certificate's key can verify: pkeyopts are passed to `openssl pkeyutl
// -verify` as -pkeyopt options, e.g. "digest:sha384" for PKCS#1 v1.5 or
// ECDSA over a SHA-384 digest, plus "rsa_padding_mode:pss",
// "rsa_pss_saltlen:digest" and "rsa_mgf1_md:sha384" for RSASSA-PSS.
func VerifyWithOpenSSLOpts(t testing.TB, certDER, digest, sig []byte, pkeyopts ...string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is required (apt-get install openssl):", err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, dg, sg := write("cert.der", certDER), write("digest.bin", digest), write("sig.bin", sig)
	pub := filepath.Join(dir, "pub.pem")
	if out, err := exec.Command("openssl", "x509", "-inform", "DER", "-in", cert, "-pubkey", "-noout", "-out", pub).CombinedOutput(); err != nil {
		t.Fatalf("openssl x509: %v: %s", err, out)
	}
	args := []string{"pkeyutl", "-verify", "-pubin", "-inkey", pub, "-in", dg, "-sigfile", sg}
	for _, o := range pkeyopts {
		args = append(args, "-pkeyopt", o)
	}
	out, err := exec.Command("openssl", args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
		t.Fatalf("openssl pkeyutl -verify: %v: %s", err, out)
	}
}

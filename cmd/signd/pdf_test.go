package main

import (
	"bytes"
	"context"
	"encoding/asn1"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/digitorus/pkcs7"
	"golang.org/x/oauth2"

	"github.com/signd/signd/cmd/signd-pdf/remote"
	"github.com/signd/signd/oauth/oauthtest"
)

// TestSignPDF signs testdata/contract.pdf the way cmd/signd-pdf does — the
// service and credential code flows through the login and consent pages,
// credentials/info for the chain, signHash for the signed attributes,
// signatures/timestamp for the signature time-stamp — against the daemon
// on SoftHSM2 and bbolt, and validates the result with poppler's pdfsig
// (signature valid, certificate trusted given the test CAs), with
// `openssl cms -verify` on the extracted CMS and with `openssl ts -verify`
// on its time-stamp token.
func TestSignPDF(t *testing.T) {
	for _, tool := range []string{"pdfsig", "certutil", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	e := newEnv(t, "csc:\n  timestamp:\n    enabled: true\n    policy: "+tsaPolicy+"\n    label: tsa-pdf\n")
	tsaCA := newTestCA(t, "TSA CA")
	enrollTSA(t, e, tsaCA)
	cred, base, _ := startJourney(t, e)

	conf, octx := journeyClient(base)
	browser := oauthtest.NewBrowser(nil)
	flow := func(scope string, params ...oauth2.AuthCodeOption) (string, error) {
		tok, err := conf.Exchange(octx, codeFlow(t, browser, conf, scope, "st", params...))
		if err != nil {
			return "", err
		}
		return tok.AccessToken, nil
	}
	service, err := flow("service")
	if err != nil {
		t.Fatal(err)
	}
	authorized := 0
	client := &remote.Client{
		BaseURL: base, AccessToken: service, CredentialID: cred,
		Authorize: func(_ context.Context, digest []byte) (string, error) {
			authorized++
			return flow("credential", oneSignature(cred, digest)...)
		},
	}
	chain, err := client.Chain(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	in, err := os.Open(filepath.Join("testdata", "contract.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	st, _ := in.Stat()
	var out bytes.Buffer
	if err := remote.Sign(context.Background(), client, in, st.Size(), &out, remote.Document{Name: "Alice Jansen", Reason: "I agree", Location: "Utrecht"}); err != nil {
		t.Fatalf("sign: %v", err)
	}
	if authorized != 1 {
		t.Errorf("%d credential authorizations for one signature", authorized)
	}
	dir := t.TempDir()
	signed := filepath.Join(dir, "signed.pdf")
	os.WriteFile(signed, out.Bytes(), 0o600)

	// pdfsig trusts what the NSS database trusts: the two test CAs.
	nss := filepath.Join(dir, "nss")
	os.Mkdir(nss, 0o700)
	runOK(t, "certutil", "-N", "-d", "sql:"+nss, "--empty-password")
	signerCA := filepath.Join(dir, "signer-ca.pem")
	tsaCAFile := filepath.Join(dir, "tsa-ca.pem")
	os.WriteFile(signerCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: chain[len(chain)-1].Raw}), 0o600)
	os.WriteFile(tsaCAFile, []byte(tsaCA.pem()), 0o600)
	runOK(t, "certutil", "-A", "-d", "sql:"+nss, "-n", "signer-ca", "-t", "CT,C,C", "-i", signerCA)
	runOK(t, "certutil", "-A", "-d", "sql:"+nss, "-n", "tsa-ca", "-t", "CT,C,C", "-i", tsaCAFile)
	report := runOK(t, "pdfsig", "-nssdir", "sql:"+nss, signed)
	for _, want := range []string{
		"Signature #1:", "Signer Certificate Common Name: Alice Jansen",
		"Signature Validation: Signature is Valid.", "Certificate Validation: Certificate is Trusted.",
		"Signed Ranges: [0 - ", "Total document signed",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("pdfsig does not say %q:\n%s", want, report)
		}
	}

	// The CMS in /Contents, verified by OpenSSL over the signed byte ranges.
	cms, content := extractSignature(t, out.Bytes())
	cmsFile, contentFile := filepath.Join(dir, "sig.p7s"), filepath.Join(dir, "content.bin")
	os.WriteFile(cmsFile, cms, 0o600)
	os.WriteFile(contentFile, content, 0o600)
	if o, err := exec.Command("openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", cmsFile, "-content", contentFile,
		"-CAfile", signerCA, "-purpose", "any", "-out", os.DevNull).CombinedOutput(); err != nil || !strings.Contains(string(o), "Verification successful") {
		t.Errorf("openssl cms -verify: %v\n%s", err, o)
	}
	// A changed byte in the signed content breaks it.
	content[len(content)/2] ^= 1
	os.WriteFile(contentFile, content, 0o600)
	if o, err := exec.Command("openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", cmsFile, "-content", contentFile,
		"-CAfile", signerCA, "-purpose", "any", "-out", os.DevNull).CombinedOutput(); err == nil {
		t.Errorf("openssl cms -verify accepted changed content:\n%s", o)
	}

	// The signature time-stamp: an unsigned attribute of the signer over
	// the signature value (RFC 3161 Appendix A), from our TSA.
	p7, err := pkcs7.Parse(cms)
	if err != nil {
		t.Fatal(err)
	}
	si := p7.GetOnlySigner()
	if si == nil || !si.Equal(chain[0]) {
		t.Fatalf("CMS signer %v", si)
	}
	var token []byte
	for _, a := range cmsSignerUnsignedAttrs(t, cms) {
		if a.Type.Equal(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 14}) {
			token = a.Value.Bytes
		}
	}
	if token == nil {
		t.Fatal("the signature has no signature time-stamp")
	}
	tokFile := filepath.Join(dir, "token.der")
	os.WriteFile(tokFile, token, 0o600)
	sigValue := cmsSignatureValue(t, cms)
	sigFile := filepath.Join(dir, "sigvalue.bin")
	os.WriteFile(sigFile, sigValue, 0o600)
	if o, err := exec.Command("openssl", "ts", "-verify", "-in", tokFile, "-token_in", "-data", sigFile, "-CAfile", tsaCAFile).CombinedOutput(); err != nil ||
		!strings.Contains(string(o), "Verification: OK") {
		t.Errorf("openssl ts -verify of the signature time-stamp: %v\n%s", err, o)
	}
}

func runOK(t *testing.T, name string, args ...string) string {
	t.Helper()
	o, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, o)
	}
	return string(o)
}

var byteRangeRE = regexp.MustCompile(`/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]`)

// extractSignature returns the DER CMS of the PDF's (one) signature and
// the bytes its /ByteRange covers.
func extractSignature(t *testing.T, pdf []byte) (cms, content []byte) {
	t.Helper()
	m := byteRangeRE.FindSubmatch(pdf)
	if m == nil {
		t.Fatal("no /ByteRange in the signed PDF")
	}
	var r [4]int
	for i := range r {
		r[i], _ = strconv.Atoi(string(m[i+1]))
	}
	content = append(append([]byte{}, pdf[r[0]:r[0]+r[1]]...), pdf[r[2]:r[2]+r[3]]...)
	hexContents := strings.TrimRight(string(pdf[r[0]+r[1]+1:r[2]-1]), "0")
	if len(hexContents)%2 == 1 {
		hexContents += "0"
	}
	der := make([]byte, len(hexContents)/2)
	for i := range der {
		v, err := strconv.ParseUint(hexContents[2*i:2*i+2], 16, 8)
		if err != nil {
			t.Fatalf("/Contents: %v", err)
		}
		der[i] = byte(v)
	}
	// The placeholder is padded with zeros: keep the DER element only.
	var raw asn1.RawValue
	if _, err := asn1.Unmarshal(der, &raw); err != nil {
		t.Fatalf("/Contents is not DER: %v", err)
	}
	return raw.FullBytes, content
}

// cmsSigner is enough of RFC 5652 SignerInfo to reach the signature value
// and the unsigned attributes.
type cmsSigner struct {
	Version            int
	SID                asn1.RawValue
	DigestAlgorithm    asn1.RawValue
	SignedAttrs        asn1.RawValue `asn1:"optional,tag:0"`
	SignatureAlgorithm asn1.RawValue
	Signature          []byte
	UnsignedAttrs      []cmsAttribute `asn1:"optional,tag:1,set"`
}

type cmsAttribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue `asn1:"set"`
}

func cmsSignerInfo(t *testing.T, cms []byte) cmsSigner {
	t.Helper()
	var ci struct {
		Type    asn1.ObjectIdentifier
		Content asn1.RawValue `asn1:"explicit,tag:0"`
	}
	if _, err := asn1.Unmarshal(cms, &ci); err != nil {
		t.Fatal(err)
	}
	var sd struct {
		Version          int
		DigestAlgorithms asn1.RawValue
		EncapContentInfo asn1.RawValue
		Certificates     asn1.RawValue `asn1:"optional,tag:0"`
		CRLs             asn1.RawValue `asn1:"optional,tag:1"`
		SignerInfos      []cmsSigner   `asn1:"set"`
	}
	if _, err := asn1.Unmarshal(ci.Content.Bytes, &sd); err != nil {
		t.Fatal(err)
	}
	if len(sd.SignerInfos) != 1 {
		t.Fatalf("%d signers", len(sd.SignerInfos))
	}
	return sd.SignerInfos[0]
}

func cmsSignatureValue(t *testing.T, cms []byte) []byte { return cmsSignerInfo(t, cms).Signature }

func cmsSignerUnsignedAttrs(t *testing.T, cms []byte) []cmsAttribute {
	return cmsSignerInfo(t, cms).UnsignedAttrs
}

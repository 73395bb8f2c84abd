package csc_test

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// fixture is what the error rows are built from: one env with credentials
// in every state and fresh tokens per row.
type fixture struct {
	*env
	alice, bob, aliceRP2 string // access tokens
	ok, other, disabled  string // credentials of alice
	expired, notYet      string
	pending, bobs        string
}

func newFixture(t *testing.T) *fixture {
	e := newEnv(t)
	f := &fixture{env: e}
	f.alice = e.accessToken("alice", "rp1")
	f.aliceRP2 = e.accessToken("alice", "rp2")
	f.bob = e.accessToken("bob", "rp1")
	f.ok = e.credential(valid("alice", keyA))
	f.other = e.credential(valid("alice", keyB))
	d := valid("alice", keyA)
	d.status = store.CredentialDisabled
	f.disabled = e.credential(d)
	x := valid("alice", keyA)
	x.nb, x.na = -48*time.Hour, -time.Hour
	f.expired = e.credential(x)
	y := valid("alice", keyA)
	y.nb, y.na = time.Hour, 48*time.Hour
	f.notYet = e.credential(y)
	f.pending = e.credential(credSpec{owner: "alice", key: keyB, status: store.CredentialPending})
	f.bobs = e.credential(valid("bob", keyB))
	return f
}

// body builds a JSON body from key/value pairs, keeping their order and
// allowing raw JSON values through json.RawMessage.
func body(kv ...any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		b.Write(k)
		b.WriteByte(':')
		switch v := kv[i+1].(type) {
		case json.RawMessage:
			b.Write(v)
		default:
			data, _ := json.Marshal(v)
			b.Write(data)
		}
	}
	b.WriteByte('}')
	return b.String()
}

type raw = json.RawMessage

const (
	rsaEnc  = "1.2.840.113549.1.1.1"
	sha256R = "1.2.840.113549.1.1.11"
	sha256O = "2.16.840.1.101.3.4.2.1"
	sha1O   = "1.3.14.3.2.26"
)

// TestErrorRows runs every signHash, credentials/list and credentials/info
// error row of reference/csc.md (and the transport-level ones of the issue)
// through the real router and checks status, error and the exact
// error_description.
func TestErrorRows(t *testing.T) {
	f := newFixture(t)
	h := digest("document")
	h64 := b64(h)
	h384 := hashOf(crypto.SHA384, "document")
	// pssTrailing is valid SHA-256 RSASSA-PSS-params followed by a byte.
	pssDER, _ := base64.StdEncoding.DecodeString(pssParams(t, sha256O, mgf1O, sha256O, 32, 0))
	pssTrailing := base64.StdEncoding.EncodeToString(append(pssDER, 0))
	// sad mints a SAD of alice/rp1 for credential f.ok and digest h.
	sad := func() string { return f.sad("alice", "rp1", f.ok, 5*time.Minute, h) }
	signHash := func(kv ...any) func() (string, string) {
		return func() (string, string) { return f.alice, body(kv...) }
	}
	std := func(cred string, extra ...any) func() (string, string) {
		return func() (string, string) {
			kv := append([]any{"credentialID", cred, "SAD", sad(), "hash", []string{h64}, "hashAlgo", sha256O, "signAlgo", rsaEnc}, extra...)
			return f.alice, body(kv...)
		}
	}
	const bad = http.StatusBadRequest
	const ir = "invalid_request"
	rows := []struct {
		name   string
		method string
		req    func() (bearer, body string)
		status int
		code   string
		desc   string
	}{
		// signHash, the specification's table.
		{"SAD missing", "signatures/signHash", signHash("credentialID", f.ok, "hash", []string{h64}, "hashAlgo", sha256O, "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) string parameter SAD"},
		{"SAD not a string", "signatures/signHash", signHash("credentialID", f.ok, "SAD", 12, "hash", []string{h64}, "hashAlgo", sha256O, "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) string parameter SAD"},
		{"SAD invalid", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "no-such-sad", "hash", []string{h64}, "hashAlgo", sha256O, "signAlgo", rsaEnc), bad, ir, "Invalid parameter SAD"},
		{"credentialID missing", "signatures/signHash", func() (string, string) {
			return f.alice, body("SAD", sad(), "hash", []string{h64}, "hashAlgo", sha256O, "signAlgo", rsaEnc)
		}, bad, ir, "Missing (or invalid type) string parameter credentialID"},
		{"credentialID not a string", "signatures/signHash", signHash("credentialID", 5, "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) string parameter credentialID"},
		{"credentialID empty", "signatures/signHash", signHash("credentialID", "", "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) string parameter credentialID"},
		{"credentialID unknown", "signatures/signHash", std("no-such-credential"), bad, ir, "Invalid parameter credentialID"},
		{"credentialID of another user", "signatures/signHash", std(f.bobs), bad, ir, "Invalid parameter credentialID"},
		{"credentialID pending", "signatures/signHash", std(f.pending), bad, ir, "Invalid parameter credentialID"},
		{"credentialIDs array of two", "signatures/signHash", signHash("credentialIDs", []string{f.ok, f.other}, "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc), bad, ir, "Invalid parameter credentialIDs"},
		{"credentialIDs number", "signatures/signHash", signHash("credentialIDs", 1, "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) string parameter credentialIDs"},
		{"credentialID and credentialIDs differ", "signatures/signHash", signHash("credentialID", f.ok, "credentialIDs", []string{f.other}, "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc), bad, ir, "Parameters credentialID and credentialIDs differ"},
		{"hash missing", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) array parameter hash"},
		{"hash not an array", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", h64, "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) array parameter hash"},
		{"hash empty", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{}, "signAlgo", rsaEnc), bad, ir, "Empty hash array"},
		{"hash element not base64", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{"not*base64"}, "signAlgo", rsaEnc), bad, ir, "Invalid Base64 hash string parameter"},
		{"hash element base64url", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{"_-" + h64[2:]}, "signAlgo", rsaEnc), bad, ir, "Invalid Base64 hash string parameter"},
		{"hash element a number", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", raw(`[1]`), "signAlgo", rsaEnc), bad, ir, "Invalid Base64 hash string parameter"},
		{"hash not authorized by the SAD", "signatures/signHash", func() (string, string) {
			return f.alice, body("credentialID", f.ok, "SAD", sad(), "hash", []string{b64(digest("other"))}, "hashAlgo", sha256O, "signAlgo", rsaEnc)
		}, bad, ir, "Hash is not authorized by the SAD."},
		{"signAlgo missing", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "hashAlgo", sha256O), bad, ir, "Missing (or invalid type) string parameter signAlgo"},
		{"signAlgoParams not a string", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", sha256R, "signAlgoParams", 5), bad, ir, "Missing (or invalid type) string parameter signAlgoParams"},
		{"signAlgoParams for an algorithm without", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", sha256R, "signAlgoParams", "MAA="), bad, ir, "Invalid parameter signAlgoParams"},
		{"hashAlgo missing with rsaEncryption", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc), bad, ir, "Missing (or invalid type) string parameter hashAlgo"},
		{"hashAlgo not a string", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", sha256R, "hashAlgo", 1), bad, ir, "Missing (or invalid type) string parameter hashAlgo"},
		{"hashAlgo SHA-1", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc, "hashAlgo", sha1O), bad, ir, "Invalid parameter hashAlgo"},
		{"hashAlgo SHA-1 with sha256WithRSA", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", sha256R, "hashAlgo", sha1O), bad, ir, "Invalid parameter hashAlgo"},
		{"signAlgo invalid", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", "1.2.840.113549.1.1.5", "hashAlgo", sha256O), bad, ir, "Invalid parameter signAlgo"},
		{"signAlgo PSS without signAlgoParams", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "hashAlgo", sha256O), bad, ir, "Missing (or invalid type) string parameter signAlgoParams"},
		{"signAlgo PSS, signAlgoParams not base64", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", "not*base64"), bad, ir, "Invalid parameter signAlgoParams: not a base64 DER RSASSA-PSS-params"},
		{"signAlgo PSS, signAlgoParams garbage DER", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", "AAAA"), bad, ir, "Invalid parameter signAlgoParams: not a base64 DER RSASSA-PSS-params"},
		{"signAlgo PSS, signAlgoParams empty", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", ""), bad, ir, "Missing (or invalid type) string parameter signAlgoParams"},
		{"signAlgo PSS, signAlgoParams NULL", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", derNull64), bad, ir, "Invalid parameter signAlgoParams: not a base64 DER RSASSA-PSS-params"},
		{"signAlgo PSS, trailing bytes", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssTrailing), bad, ir, "Invalid parameter signAlgoParams: not a base64 DER RSASSA-PSS-params"},
		{"signAlgo PSS, default (SHA-1) params", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", "MAA="), bad, ir, "Invalid parameter signAlgoParams: the hash must be SHA-256, SHA-384 or SHA-512"},
		{"signAlgo PSS, SHA-1", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha1O, mgf1O, sha1O, 20, 0)), bad, ir, "Invalid parameter signAlgoParams: the hash must be SHA-256, SHA-384 or SHA-512"},
		{"signAlgo PSS, MGF1 with another hash", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha384O, 32, 0)), bad, ir, "Invalid parameter signAlgoParams: the mask generation function must be MGF1 with the signature's hash"},
		{"signAlgo PSS, another MGF", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, "1.2.840.113549.1.1.9", sha256O, 32, 0)), bad, ir, "Invalid parameter signAlgoParams: the mask generation function must be MGF1 with the signature's hash"},
		{"signAlgo PSS, salt 20", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, 20, 0)), bad, ir, "Invalid parameter signAlgoParams: the salt length must equal the hash length"},
		{"signAlgo PSS, salt 0", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, 0, 0)), bad, ir, "Invalid parameter signAlgoParams: the salt length must equal the hash length"},
		{"signAlgo PSS, salt 64 with SHA-256", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, 64, 0)), bad, ir, "Invalid parameter signAlgoParams: the salt length must equal the hash length"},
		{"signAlgo PSS, trailer 2", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, 32, 2)), bad, ir, "Invalid parameter signAlgoParams: the trailer field must be 1"},
		{"signAlgo PSS, hashAlgo of another hash", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, 32, 0), "hashAlgo", sha384O), bad, ir, "Invalid parameter hashAlgo"},
		{"signAlgo PSS SHA-384, SHA-256 digest", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", pssO, "signAlgoParams", pssParams(t, sha384O, mgf1O, sha384O, 48, 0)), bad, ir, "Invalid digest value length"},
		{"PSS params on sha256WithRSA", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", sha256R, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, 32, 0)), bad, ir, "Invalid parameter signAlgoParams"},
		{"NULL params on ECDSA", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", ecdsa256, "signAlgoParams", derNull64), bad, ir, "Invalid parameter signAlgoParams"},
		{"PSS params on ECDSA", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", ecdsa256, "signAlgoParams", pssParams(t, sha256O, mgf1O, sha256O, 32, 0)), bad, ir, "Invalid parameter signAlgoParams"},
		{"ECDSA OID on an RSA key", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", ecdsa256), bad, ir, "Invalid parameter signAlgo: the credential's key is RSA"},
		{"sha1WithRSA", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(h[:20])}, "signAlgo", "1.2.840.113549.1.1.5"), bad, ir, "Invalid digest value length"},
		{"ecdsa-with-SHA1", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", "1.2.840.10045.4.1"), bad, ir, "Invalid parameter signAlgo"},
		{"ecdsa-with-SHA224", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", "1.2.840.10045.4.3.1"), bad, ir, "Invalid parameter signAlgo"},
		{"signAlgo a hash OID", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", sha256O), bad, ir, "Invalid parameter signAlgo"},
		{"signAlgo not an OID", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", "RS256"), bad, ir, "Invalid parameter signAlgo"},
		{"sha384WithRSA, SHA-256 digest", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", sha384R), bad, ir, "Invalid digest value length"},
		{"sha256WithRSA, SHA-384 digest", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(h384)}, "signAlgo", sha256R), bad, ir, "Invalid digest value length"},
		{"rsaEncryption SHA-512, SHA-384 digest", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(h384)}, "signAlgo", rsaEnc, "hashAlgo", sha512O), bad, ir, "Invalid digest value length"},
		{"mixed digest lengths", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(h384), h64}, "signAlgo", ecdsa384), bad, ir, "Invalid digest value length"},
		{"sha384WithRSA, hashAlgo SHA-256", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(h384)}, "signAlgo", sha384R, "hashAlgo", sha256O), bad, ir, "Invalid parameter hashAlgo"},
		{"ecdsa-with-SHA256, hashAlgo SHA-512", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", ecdsa256, "hashAlgo", sha512O), bad, ir, "Invalid parameter hashAlgo"},
		{"clientData numeric", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{h64}, "signAlgo", rsaEnc, "hashAlgo", sha256O, "clientData", 42), bad, ir, "Invalid parameter clientData"},
		{"digest of 31 bytes", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(h[:31])}, "signAlgo", rsaEnc, "hashAlgo", sha256O), bad, ir, "Invalid digest value length"},
		{"digest of 33 bytes", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(append(h, 1))}, "signAlgo", rsaEnc, "hashAlgo", sha256O), bad, ir, "Invalid digest value length"},
		{"SHA-1 sized digest", "signatures/signHash", signHash("credentialID", f.ok, "SAD", "x", "hash", []string{b64(h[:20])}, "signAlgo", rsaEnc, "hashAlgo", sha256O), bad, ir, "Invalid digest value length"},
		{"SAD expired", "signatures/signHash", func() (string, string) {
			s := f.sad("alice", "rp1", f.ok, time.Second, h)
			f.clock.Advance(2 * time.Second)
			return f.alice, body("credentialID", f.ok, "SAD", s, "hash", []string{h64}, "hashAlgo", sha256O, "signAlgo", rsaEnc)
		}, bad, ir, "SAD expired"},
		{"certificate expired", "signatures/signHash", std(f.expired), bad, ir, "Signing certificate 'CN=alice signer,O=Example Org,C=NL' is expired."},
		{"certificate not yet valid", "signatures/signHash", std(f.notYet), bad, ir, "Signing certificate 'CN=alice signer,O=Example Org,C=NL' is not yet valid."},
		{"credential disabled", "signatures/signHash", std(f.disabled), bad, ir, "The credential identified by credentialID is disabled"},

		// Transport: one writer for every client mistake.
		{"malformed JSON", "signatures/signHash", func() (string, string) { return f.alice, `{"credentialID":` }, bad, ir, "Malformed JSON body"},
		{"trailing data", "signatures/signHash", func() (string, string) { return f.alice, `{} {}` }, bad, ir, "Malformed JSON body"},
		{"not an object", "signatures/signHash", func() (string, string) { return f.alice, `["credentialID"]` }, bad, ir, "The request body must be a JSON object"},
		{"duplicate key", "signatures/signHash", func() (string, string) {
			return f.alice, `{"credentialID":"a","SAD":"x","SAD":"y","hash":[],"signAlgo":"` + rsaEnc + `"}`
		}, bad, ir, "Duplicate parameter SAD"},
		{"duplicate key escaped", "signatures/signHash", func() (string, string) {
			return f.alice, `{"credentialID":"a","SAD":"x","\u0053AD":"y"}`
		}, bad, ir, "Duplicate parameter SAD"},
		{"duplicate key nested", "credentials/list", func() (string, string) {
			return f.alice, `{"clientData":"x","ext":{"a":1,"a":2}}`
		}, bad, ir, "Duplicate parameter a"},
		{"oversized body", "signatures/signHash", func() (string, string) {
			return f.alice, `{"clientData":"` + strings.Repeat("x", 64<<10) + `"}`
		}, bad, ir, "Request body larger than 65536 bytes"},

		// Bearer.
		{"no bearer", "signatures/signHash", func() (string, string) { return "", "{}" }, http.StatusUnauthorized, "invalid_token", "Missing access token"},
		{"garbage bearer", "signatures/signHash", func() (string, string) { return "garbage", "{}" }, http.StatusUnauthorized, "invalid_token", "The access token is invalid or revoked"},
		{"expired bearer", "credentials/list", func() (string, string) {
			v := f.accessToken("alice", "rp1")
			f.clock.Advance(2 * time.Hour)
			return v, "{}"
		}, http.StatusUnauthorized, "expired_token", "The access token has expired"},
		{"SAD as bearer", "credentials/list", func() (string, string) { return sad(), "{}" }, http.StatusUnauthorized, "invalid_token", "The access token is invalid or revoked"},
		{"service token as SAD", "signatures/signHash", func() (string, string) {
			return f.alice, body("credentialID", f.ok, "SAD", f.alice, "hash", []string{h64}, "hashAlgo", sha256O, "signAlgo", rsaEnc)
		}, bad, ir, "Invalid parameter SAD"},

		// credentials/list.
		{"list userID", "credentials/list", func() (string, string) { return f.alice, body("userID", "alice") }, bad, ir, "userID parameter MUST be null"},
		{"list pageToken garbage", "credentials/list", func() (string, string) { return f.alice, body("pageToken", "garbage!") }, bad, ir, "Invalid parameter pageToken"},
		{"list pageToken not a string", "credentials/list", func() (string, string) { return f.alice, body("pageToken", 3) }, bad, ir, "Missing (or invalid type) string parameter pageToken"},
		{"list maxResults zero", "credentials/list", func() (string, string) { return f.alice, body("maxResults", 0) }, bad, ir, "Invalid parameter maxResults"},
		{"list maxResults negative", "credentials/list", func() (string, string) { return f.alice, body("maxResults", -1) }, bad, ir, "Invalid parameter maxResults"},
		{"list maxResults fraction", "credentials/list", func() (string, string) { return f.alice, body("maxResults", 1.5) }, bad, ir, "Invalid parameter maxResults"},
		{"list maxResults word", "credentials/list", func() (string, string) { return f.alice, body("maxResults", "ten") }, bad, ir, "Invalid parameter maxResults"},
		{"list maxResults boolean", "credentials/list", func() (string, string) { return f.alice, body("maxResults", true) }, bad, ir, "Missing (or invalid type) integer parameter maxResults"},
		{"list clientData numeric", "credentials/list", func() (string, string) { return f.alice, body("clientData", 7) }, bad, ir, "Invalid parameter clientData"},

		// credentials/info.
		{"info credentialID missing", "credentials/info", func() (string, string) { return f.alice, "{}" }, bad, ir, "Missing (or invalid type) string parameter credentialID"},
		{"info credentialID not a string", "credentials/info", func() (string, string) { return f.alice, body("credentialID", []string{f.ok}) }, bad, ir, "Missing (or invalid type) string parameter credentialID"},
		{"info credentialID unknown", "credentials/info", func() (string, string) { return f.alice, body("credentialID", "nope") }, bad, ir, "Invalid parameter credentialID"},
		{"info credentialID of another user", "credentials/info", func() (string, string) { return f.alice, body("credentialID", f.bobs) }, bad, ir, "Invalid parameter credentialID"},
		{"info credentialID pending", "credentials/info", func() (string, string) { return f.alice, body("credentialID", f.pending) }, bad, ir, "Invalid parameter credentialID"},
		{"info certificates bad", "credentials/info", func() (string, string) { return f.alice, body("credentialID", f.ok, "certificates", "all") }, bad, ir, "Invalid parameter certificates"},
		{"info certificates not a string", "credentials/info", func() (string, string) { return f.alice, body("credentialID", f.ok, "certificates", 1) }, bad, ir, "Missing (or invalid type) string parameter certificates"},
		{"info certInfo not a boolean", "credentials/info", func() (string, string) { return f.alice, body("credentialID", f.ok, "certInfo", "yes") }, bad, ir, "Missing (or invalid type) boolean parameter certInfo"},
		{"info authInfo not a boolean", "credentials/info", func() (string, string) { return f.alice, body("credentialID", f.ok, "authInfo", 1) }, bad, ir, "Missing (or invalid type) boolean parameter authInfo"},

		// info.
		{"info lang not a string", "info", func() (string, string) { return "", body("lang", 1) }, bad, ir, "Missing (or invalid type) string parameter lang"},

		// Methods.
		{"unknown method", "credentials/nope", func() (string, string) { return "", "{}" }, http.StatusNotFound, "not_found", "Unknown CSC method"},
		{"unimplemented method", "credentials/authorize", func() (string, string) { return f.alice, "{}" }, http.StatusNotImplemented, "not_implemented", "Method credentials/authorize is not implemented by this service (see info methods)"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			defer f.clock.Set(f.clock.Now()) // rows that travel in time come back
			bearer, b := row.req()
			wantError(t, f.call(row.method, bearer, b), row.status, row.code, row.desc)
		})
	}

	// Rows about the request itself rather than its body.
	t.Run("wrong Content-Type", func(t *testing.T) {
		r := f.do(http.MethodPost, "credentials/list", "{}", map[string]string{"Authorization": "Bearer " + f.alice, "Content-Type": "text/plain"})
		wantError(t, r, bad, ir, "Content-Type must be application/json")
	})
	t.Run("form Content-Type", func(t *testing.T) {
		r := f.do(http.MethodPost, "info", "lang=en", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		wantError(t, r, bad, ir, "Content-Type must be application/json")
	})
	t.Run("JSON body without Content-Type", func(t *testing.T) {
		r := f.do(http.MethodPost, "info", "{}", nil)
		wantError(t, r, bad, ir, "Content-Type must be application/json")
	})
	t.Run("white space body", func(t *testing.T) {
		// Only a body of no bytes stands for {}: white space is a body,
		// which docs/openapi.yaml requires to be JSON with its Content-Type
		// (found by FuzzCSCRequest).
		wantError(t, f.do(http.MethodPost, "info", " ", nil), bad, ir, "Content-Type must be application/json")
		wantError(t, f.do(http.MethodPost, "info", "\r\n", map[string]string{"Content-Type": "application/json"}), bad, ir, "Malformed JSON body")
	})
	t.Run("malformed Authorization header", func(t *testing.T) {
		r := f.do(http.MethodPost, "credentials/list", "{}", map[string]string{"Authorization": "Basic YTpi", "Content-Type": "application/json"})
		wantError(t, r, bad, ir, "Authorization header is not a Bearer token")
	})
	t.Run("GET", func(t *testing.T) {
		r := f.do(http.MethodGet, "credentials/list", "", map[string]string{"Authorization": "Bearer " + f.alice})
		wantError(t, r, http.StatusMethodNotAllowed, ir, "CSC methods are called with POST")
		if r.header.Get("Allow") != http.MethodPost {
			t.Errorf("Allow = %q", r.header.Get("Allow"))
		}
	})
	t.Run("bearer challenge", func(t *testing.T) {
		r := f.call("credentials/list", "garbage", "{}")
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer realm="https://sign.example.com"`) {
			t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
		}
	})
}

package csc

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/signd/signd/oauth"
)

// Real request bodies, as the handler tests, pyHanko and the CSC v1
// specification's samples send them. They seed every fuzz target of this
// package that reads a body. The 32-byte digest is SHA-256("fuzz").
const (
	seedDigest = "k4ULcHWF5ATklRo93B8Fo0s9T1/AgdYW9G2KLo8cjmg="
	seedCred   = "kr3e3rdpe6muvlifxu2m3wpecu"
	// pssSHA256Params is base64 DER RSASSA-PSS-params: SHA-256, MGF1 with
	// SHA-256, salt 32.
	pssSHA256Params = "MDSgDzANBglghkgBZQMEAgEFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgEFAKIDAgEg"
)

var realBodies = []string{
	// signatures/signHash
	`{"credentialID":"` + seedCred + `","SAD":"_TiHRG-bAH3XlFQZ3ndFhkXf9P24_TiHRG-bAH3XlFQ","hash":["` + seedDigest + `"],"hashAlgo":"2.16.840.1.101.3.4.2.1","signAlgo":"1.2.840.113549.1.1.1"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.11"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.11","hashAlgo":"2.16.840.1.101.3.4.2.1","signAlgoParams":"BQA=","clientData":"12345678"}`,
	`{"credentialIDs":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.1","hashAlgo":"2.16.840.1.101.3.4.2.1"}`,
	`{"credentialID":"` + seedCred + `","credentialIDs":["` + seedCred + `"],"SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.1","hashAlgo":"2.16.840.1.101.3.4.2.1"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + strings.TrimRight(seedDigest, "=") + `","` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.1","hashAlgo":"2.16.840.1.101.3.4.2.1"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.10","signAlgoParams":"` + pssSHA256Params + `"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + strings.Repeat("A", 64) + `"],"signAlgo":"1.2.840.10045.4.3.3","hashAlgo":"2.16.840.1.101.3.4.2.2"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + strings.Repeat("A", 86) + `=="],"signAlgo":"1.2.840.113549.1.1.13"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.10","signAlgoParams":"MDSgDzANBglghkgBZQMEAgEFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgEFAKIDAgEU"}`,
	`{"credentialID":"a","SAD":"x","SAD":"y","hash":[],"signAlgo":"1.2.840.113549.1.1.1"}`,
	`{"credentialID":"a","SAD":"x","\u0053AD":"y"}`,
	`{"clientData":"x","ext":{"a":1,"a":2}}`,
	`{"credentialID":`, `{} {}`, `[]`, ``, ` `,
	// credentials/list
	`{}`, `{"maxResults":1}`, `{"maxResults":"50"}`, `{"maxResults":0}`, `{"maxResults":-1}`,
	`{"maxResults":99999999999999999999}`, `{"userID":null}`, `{"userID":"alice"}`,
	`{"maxResults":1,"pageToken":"a3IzZTNyZHBlNm11dmxpZnh1Mm0zd3BlY3UAAAAAAAAAAAAAAAAAAAAA"}`,
	`{"clientData":12}`,
	// credentials/info
	`{"credentialID":"` + seedCred + `"}`,
	`{"credentialID":"` + seedCred + `","certificates":"chain","certInfo":true,"authInfo":true}`,
	`{"credentialID":"` + seedCred + `","certificates":"none","certInfo":false,"lang":"nl-NL"}`,
	`{"credentialID":"` + seedCred + `","certificates":"all"}`,
	// info
	`{"lang":"nl-NL"}`,
}

// descRE matches every description a CSC request parser may answer:
// the specification's texts (reference/csc.md) and signd's additions. A
// description never echoes request content beyond a parameter name.
var descRE = regexp.MustCompile(`^(` +
	`Missing \(or invalid type\) (string|array|boolean|integer) parameter [A-Za-z]+` +
	`|Invalid parameter [A-Za-z]+` +
	`|Duplicate parameter ([A-Za-z0-9_]{1,64}|\(unprintable name\))` +
	`|Too many hashes: at most [0-9]+ per request` +
	`|` + regexp.QuoteMeta(descEmptyHash) +
	`|` + regexp.QuoteMeta(descBadBase64) +
	`|` + regexp.QuoteMeta(descDigestLength) +
	`|` + regexp.QuoteMeta(descCredIDsConflict) +
	`|` + regexp.QuoteMeta(descPSSParamsDER) +
	`|` + regexp.QuoteMeta(descPSSParamsHash) +
	`|` + regexp.QuoteMeta(descPSSParamsMGF) +
	`|` + regexp.QuoteMeta(descPSSParamsSalt) +
	`|` + regexp.QuoteMeta(descPSSParamsTrailer) +
	`|` + regexp.QuoteMeta(descUserIDNotNull) +
	`|` + regexp.QuoteMeta(descContentType) +
	`|` + regexp.QuoteMeta(descMalformedJSON) +
	`|` + regexp.QuoteMeta(descNotObject) +
	`|` + regexp.QuoteMeta(descBodyTooLarge) +
	`)$`)

// checkRefusal asserts what every refusal of a request parser is: a 400
// invalid_request value with one of the known descriptions.
func checkRefusal(t *testing.T, input []byte, e *oauth.Error) {
	t.Helper()
	if e.Status != http.StatusBadRequest || e.Code != oauth.CodeInvalidRequest {
		t.Fatalf("%q: refused with %d %s, want 400 invalid_request", input, e.Status, e.Code)
	}
	if !descRE.MatchString(e.Description) {
		t.Fatalf("%q: unexpected description %q", input, e.Description)
	}
}

// FuzzReadParams reads a request body with a Content-Type and an optional
// server body limit (http.MaxBytesReader, server.body_limit_bytes), as
// every CSC method does. A refusal is a 400 with a known description; an
// accepted body was empty (no bytes; with no Content-Type or a JSON one) or
// a JSON object that encoding/json reads member for member the same.
func FuzzReadParams(f *testing.F) {
	for _, b := range realBodies {
		f.Add("application/json", []byte(b), 0)
	}
	for _, ct := range []string{"", "application/json; charset=UTF-8", "Application/JSON;charset=utf8",
		"application/json; charset=latin1", "text/plain", "application/x-www-form-urlencoded", "application/json;", "application/json; a"} {
		f.Add(ct, []byte(`{"credentialID":"x"}`), 0)
		f.Add(ct, []byte(""), 0)
	}
	f.Add("application/json", []byte(`{"credentialID":"`+seedCred+`"}`), 10)
	f.Add("application/json", append(append([]byte(`{"clientData":"`), bytes.Repeat([]byte("x"), maxBody)...), `"}`...), 0)
	f.Fuzz(func(t *testing.T, ct string, body []byte, limit int) {
		r := httptest.NewRequest(http.MethodPost, "/csc/v1/credentials/list", bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if limit > 0 {
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, int64(limit))
		}
		p, e := readParams(r)
		tooLarge := len(body) > maxBody || limit > 0 && len(body) > limit
		if e != nil {
			checkRefusal(t, body, e)
			if tooLarge != (e.Description == descBodyTooLarge) {
				t.Fatalf("%d bytes (limit %d): %q", len(body), limit, e.Description)
			}
			return
		}
		if tooLarge {
			t.Fatalf("%d bytes accepted (limit %d)", len(body), limit)
		}
		mt, _, _ := strings.Cut(ct, ";")
		jsonCT := strings.EqualFold(strings.TrimSpace(mt), "application/json")
		if len(body) == 0 {
			if len(p) != 0 || ct != "" && !jsonCT {
				t.Fatalf("empty body with Content-Type %q gave %v", ct, p)
			}
			return
		}
		if !jsonCT {
			t.Fatalf("body accepted with Content-Type %q", ct)
		}
		wantJSONMembers(t, body, p)
	})
}

// wantJSONMembers fails the test unless encoding/json reads the accepted
// body as the object p: the same members, each with the same value.
func wantJSONMembers(t *testing.T, body []byte, p params) {
	t.Helper()
	var want map[string]json.RawMessage
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("%q accepted, encoding/json refuses it: %v", body, err)
	}
	if len(want) != len(p) {
		t.Fatalf("%q: %d members, encoding/json %d", body, len(p), len(want))
	}
	for k, v := range want {
		if !jsonEqual(v, p[k]) {
			t.Fatalf("%q: member %q = %s, encoding/json %s", body, k, p[k], v)
		}
	}
}

// jsonEqual reports whether two JSON texts are the same value written the
// same way up to white space. Decoding them into any would not do: a number
// beyond float64 (a 309-digit literal) is valid JSON that does not decode.
func jsonEqual(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

// FuzzParseSignHash parses signHash bodies against a reference reading of
// CSC v1 §11.9 over encoding/json: an accepted request has the credential
// and SAD the body names, 1 to maxHashes digests that are the standard
// base64 of digests of the signature's hash, a supported signAlgo (with a
// supported hashAlgo where rsaEncryption needs it, a hashAlgo that names
// the signature's hash when present, RSASSA-PSS-params where PSS needs
// them); it survives a round trip through a canonical body unchanged. A refusal is a 400 with a known description, and the
// count its audit entry records never exceeds maxHashes+1.
func FuzzParseSignHash(f *testing.F) {
	for _, b := range realBodies {
		f.Add([]byte(b), uint8(4))
		f.Add([]byte(b), uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, capacity uint8) {
		maxHashes := int(capacity%8) + 1
		p, pe := parseObject(body)
		if pe != nil {
			return // FuzzParseObject and FuzzReadParams cover refusals of the body
		}
		req, e := parseSignHash(p, maxHashes)
		if req.hashCount > maxHashes+1 {
			t.Fatalf("%q: hash count %d past the cap %d", body, req.hashCount, maxHashes)
		}
		if !bytes.Equal(req.hashesRaw, p["hash"]) {
			t.Fatalf("%q: audit hash text %q, body has %q", body, req.hashesRaw, p["hash"])
		}
		if e != nil {
			checkRefusal(t, body, e)
			return
		}
		var ref map[string]json.RawMessage
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("%q accepted, encoding/json refuses it: %v", body, err)
		}
		refString := func(name string) (string, bool) {
			var s string
			raw, ok := ref[name]
			if !ok || json.Unmarshal(raw, &s) != nil || string(raw) == "null" {
				return "", false
			}
			return s, true
		}
		id, hasID := refString("credentialID")
		ids, hasIDs := refString("credentialIDs")
		if list := []string{}; !hasIDs && json.Unmarshal(ref["credentialIDs"], &list) == nil && len(list) == 1 {
			ids, hasIDs = list[0], true
		}
		switch {
		case req.credentialID == "":
			t.Fatalf("%q: accepted without a credential", body)
		case hasID && id != req.credentialID, hasIDs && ids != req.credentialID, !hasID && !hasIDs:
			t.Fatalf("%q: credential %q, body has %q / %q", body, req.credentialID, id, ids)
		}
		if sad, ok := refString("SAD"); !ok || sad == "" || sad != req.sad {
			t.Fatalf("%q: SAD %q, body has %q", body, req.sad, sad)
		}
		var hashes []string
		if err := json.Unmarshal(ref["hash"], &hashes); err != nil || len(hashes) == 0 || len(hashes) > maxHashes || len(hashes) != len(req.hashes) {
			t.Fatalf("%q: %d hashes accepted, body has %d (cap %d, %v)", body, len(req.hashes), len(hashes), maxHashes, err)
		}
		for i, h := range hashes {
			d, err := base64.StdEncoding.Strict().DecodeString(h)
			if err != nil {
				d, err = base64.RawStdEncoding.Strict().DecodeString(h)
			}
			if err != nil || len(d) != req.algo.opts.HashFunc().Size() || !bytes.Equal(d, req.hashes[i]) {
				t.Fatalf("%q: hash %d %q read as %x (%v)", body, i, h, req.hashes[i], err)
			}
		}
		signAlgo, _ := refString("signAlgo")
		hashAlgo, hasHashAlgo := refString("hashAlgo")
		params, hasParams := refString("signAlgoParams")
		refHash := map[string]crypto.Hash{oidSHA256: crypto.SHA256, oidSHA384: crypto.SHA384, oidSHA512: crypto.SHA512}
		implied := map[string]crypto.Hash{
			oidSHA256WithRSA: crypto.SHA256, oidSHA384WithRSA: crypto.SHA384, oidSHA512WithRSA: crypto.SHA512,
			oidECDSAWithSHA256: crypto.SHA256, oidECDSAWithSHA384: crypto.SHA384, oidECDSAWithSHA512: crypto.SHA512,
		}
		got := req.algo.opts.HashFunc()
		switch {
		case signAlgo != req.algo.oid:
			t.Fatalf("%q: signAlgo %q read as %q", body, signAlgo, req.algo.oid)
		case signAlgo == oidRSAEncryption && refHash[hashAlgo] != got:
			t.Fatalf("%q: rsaEncryption with hashAlgo %q signs %v", body, hashAlgo, got)
		case signAlgo == oidRSASSAPSS:
			if _, ok := req.algo.opts.(*rsa.PSSOptions); !ok || !hasParams {
				t.Fatalf("%q: PSS accepted as %T", body, req.algo.opts)
			}
		case signAlgo != oidRSAEncryption && implied[signAlgo] == 0:
			t.Fatalf("%q: signAlgo %q accepted", body, signAlgo)
		case signAlgo != oidRSAEncryption && implied[signAlgo] != got:
			t.Fatalf("%q: %s signs %v", body, signAlgo, got)
		}
		if hasHashAlgo && refHash[hashAlgo] != got {
			t.Fatalf("%q: hashAlgo %q accepted with %s (%v)", body, hashAlgo, signAlgo, got)
		}
		if signAlgo != oidRSASSAPSS && hasParams && params != "" && (params != derNullBase64 || req.algo.ec) {
			t.Fatalf("%q: signAlgoParams %q accepted", body, params)
		}

		// Round trip: the request written canonically reads back the same.
		enc := make([]string, len(req.hashes))
		for i, d := range req.hashes {
			enc[i] = base64.StdEncoding.EncodeToString(d)
		}
		canonBody := map[string]any{
			"credentialID": req.credentialID, "SAD": req.sad, "hash": enc, "signAlgo": signAlgo,
		}
		for oid, h := range refHash {
			if h == got {
				canonBody["hashAlgo"] = oid
			}
		}
		if signAlgo == oidRSASSAPSS {
			canonBody["signAlgoParams"] = params
		}
		canon, _ := json.Marshal(canonBody)
		p2, pe := parseObject(canon)
		if pe != nil {
			t.Fatalf("canonical %s: %v", canon, pe)
		}
		again, e := parseSignHash(p2, maxHashes)
		if e != nil || again.credentialID != req.credentialID || again.sad != req.sad || !reflect.DeepEqual(again.hashes, req.hashes) || !reflect.DeepEqual(again.algo, req.algo) {
			t.Fatalf("round trip of %q through %s: %+v, %v", body, canon, again, e)
		}
	})
}

// FuzzPageToken attacks the credentials/list page token: a token the
// handler issued opens to the credential it names for its user and for no
// other; a token that opens is exactly the one the handler would issue for
// what it opens to (one spelling per page, nothing forged or altered).
func FuzzPageToken(f *testing.F) {
	h := &Handler{PageTokenKey: bytes.Repeat([]byte{0x5a}, 32)}
	for _, s := range []struct{ after, user, other string }{
		{seedCred, "alice", "bob"},
		{"a", "alice", "alice2"},
		{strings.Repeat("z", 128), "user@example.com", "user@example.co"},
		{"id-with-\x00-nul", "carol", ""},
	} {
		f.Add(s.after, s.user, h.pageToken(s.after, s.user), s.other)
	}
	f.Add("", "alice", "", "bob")
	f.Add("x", "alice", "eAAAAAAAAAAAAAAAAAAAAAAA", "bob")
	f.Fuzz(func(t *testing.T, after, user, token, other string) {
		if after != "" && len(after) <= 512-pageTagLen {
			tok := h.pageToken(after, user)
			if got, ok := h.openPageToken(tok, user); !ok || got != after {
				t.Fatalf("token for %q of %q opens to %q, %v", after, user, got, ok)
			}
			if other != user {
				if _, ok := h.openPageToken(tok, other); ok {
					t.Fatalf("token of %q opens for %q", user, other)
				}
			}
		}
		got, ok := h.openPageToken(token, user)
		if !ok {
			return
		}
		if got == "" || len(got)+pageTagLen > 512 || !utf8.ValidString(token) {
			t.Fatalf("token %q opened to %q", token, got)
		}
		if want := h.pageToken(got, user); token != want {
			t.Fatalf("token %q opened to %q, but the token of %q is %q", token, got, got, want)
		}
	})
}

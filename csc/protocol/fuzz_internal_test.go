package protocol

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/signd/signd/oauth"
)

// Request bodies as the handler tests, pyHanko and the CSC v1
// specification's samples send them (package signhash has more signHash
// bodies). They seed every fuzz target of this package. The 32-byte
// digest is SHA-256("fuzz").
const (
	seedDigest = "k4ULcHWF5ATklRo93B8Fo0s9T1/AgdYW9G2KLo8cjmg="
	seedCred   = "kr3e3rdpe6muvlifxu2m3wpecu"
)

var realBodies = []string{
	// signatures/signHash
	`{"credentialID":"` + seedCred + `","SAD":"_TiHRG-bAH3XlFQZ3ndFhkXf9P24_TiHRG-bAH3XlFQ","hash":["` + seedDigest + `"],"hashAlgo":"2.16.840.1.101.3.4.2.1","signAlgo":"1.2.840.113549.1.1.1"}`,
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

// descRE matches every description reading a request body may answer,
// and the forms of the parameter refusals every method shares. A
// description never echoes request content beyond a parameter name.
var descRE = regexp.MustCompile(`^(` +
	`Missing \(or invalid type\) (string|array|boolean|integer) parameter [A-Za-z]+` +
	`|Invalid parameter [A-Za-z]+` +
	`|Duplicate parameter ([A-Za-z0-9_]{1,64}|\(unprintable name\))` +
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
	f.Add("application/json", append(append([]byte(`{"clientData":"`), bytes.Repeat([]byte("x"), MaxBody)...), `"}`...), 0)
	f.Fuzz(func(t *testing.T, ct string, body []byte, limit int) {
		r := httptest.NewRequest(http.MethodPost, "/csc/v1/credentials/list", bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if limit > 0 {
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, int64(limit))
		}
		p, e := ReadParams(r)
		tooLarge := len(body) > MaxBody || limit > 0 && len(body) > limit
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
func wantJSONMembers(t *testing.T, body []byte, p Params) {
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

package ops

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzDecodeStrict reads any bytes as an admin request (AddClientRequest,
// with strings, lists and a bool). It never panics; a refusal is a
// "malformed admin request" that quotes nothing of the body; an accepted
// body is exactly one JSON object whose member names are the request's
// field names, each once, and encoding/json reads the same request from
// it (so no spelling reaches a field that a reader of the body would not
// see named).
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"id":"rp","redirect_uris":["https://rp.example/cb"],"scopes":["service"],"require_pkce":true}`,
		`{"ID":"rp"}`, `{"uſer":"x"}`, `{"id":"rp","id":"rq"}`, `{"id":"r\u0070"}`, `null`, `[]`, `{"id":7}`,
		`{"id":"rp"} {}`, "{\"id\":\"r\xffp\"}", `{"scopes":[null]}`, `{"id_token_signed_response_alg":"ES256"}`,
	} {
		f.Add([]byte(s))
	}
	fields := map[string]bool{}
	rt := reflect.TypeFor[AddClientRequest]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields[name] = true
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var req AddClientRequest
		err := decodeStrict(raw, &req)
		if err != nil {
			if KindOf(err) != KindInvalid || !strings.HasPrefix(err.Error(), "malformed admin request: ") {
				t.Fatalf("%q: %v (%s)", raw, err, KindOf(err))
			}
			return
		}
		dec := jsontext.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			t.Fatalf("%q accepted, not an object", raw)
		}
		seen := map[string]bool{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				t.Fatalf("%q accepted: %v", raw, err)
			}
			if !fields[name.String()] || seen[name.String()] {
				t.Fatalf("%q accepted with member %q", raw, name.String())
			}
			seen[name.String()] = true
			if err := dec.SkipValue(); err != nil {
				t.Fatalf("%q accepted: %v", raw, err)
			}
		}
		var v1 AddClientRequest
		if err := json.Unmarshal(raw, &v1); err != nil || !reflect.DeepEqual(v1, req) {
			t.Fatalf("%q: encoding/json reads %+v (%v), the admin decoder %+v", raw, v1, err, req)
		}
	})
}

package csc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseObject checks the one-pass splitter against encoding/json: for
// every input both accept, they agree member by member; inputs with
// duplicate keys are refused by the splitter.
func FuzzParseObject(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":"x","b":[1,2,{"c":null}],"d":{"e":"}"}}`,
		`{"k\u0041":"\"}\\","x":-1.5e3,"y":true,"z":false,"w":null}`,
		`{"hash":["AAAA","BBBB"],"SAD":"s","credentialID":"c"}`,
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `{"a":1,"\u0061":2}`,
		"{\n\t\"a\" :\r [ ] ,\"b\":{ }\n}", `[1]`, `"x"`, `{"a":}`, `{} x`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, e := parseObject(body)
		var want map[string]json.RawMessage
		err := json.Unmarshal(body, &want)
		if e != nil {
			return // refused; json.Unmarshal may accept duplicates, we do not
		}
		if err != nil {
			t.Fatalf("parseObject accepted %q, encoding/json refuses it: %v", body, err)
		}
		if len(p) != len(want) {
			t.Fatalf("%q: %d members, encoding/json %d", body, len(p), len(want))
		}
		for k, v := range want {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(p[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%q: member %q = %s, encoding/json %s", body, k, p[k], v)
			}
		}
	})
}

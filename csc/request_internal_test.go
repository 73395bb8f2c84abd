package csc

import (
	"bytes"
	"encoding/json"
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
	for _, b := range realBodies {
		f.Add([]byte(b))
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
			if !jsonEqual(v, p[k]) {
				t.Fatalf("%q: member %q = %s, encoding/json %s", body, k, p[k], v)
			}
		}
	})
}

// FuzzArrayElems checks the capped array walk against encoding/json: for
// every valid array, the elements up to the cap are encoding/json's, and
// more is set exactly when the array has more.
func FuzzArrayElems(f *testing.F) {
	for _, seed := range []string{
		`[]`, `[ ]`, `[1]`, `["a","b","c"]`, ` [ "x\"]" , {"a":[1,"]"]} , [[]] , null , -1e5 ] `,
		`["AAAA",1,"*",null,""]`, "[\n\"a\"\r\n,\t\"b\"]",
	} {
		for _, limit := range []int{0, 1, 2, 4} {
			f.Add([]byte(seed), limit)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, limit int) {
		if limit < 0 || limit > 1000 {
			return
		}
		var want []json.RawMessage
		if json.Unmarshal(body, &want) != nil || want == nil {
			return // arrayElems is only called on a valid array
		}
		got, more := arrayElems(bytes.TrimSpace(body), limit)
		if more != (len(want) > limit) || len(got) != min(len(want), limit) {
			t.Fatalf("%q limit %d: %d elements, more %v; encoding/json has %d", body, limit, len(got), more, len(want))
		}
		for i := range got {
			if !json.Valid(got[i]) {
				t.Fatalf("%q: element %d %q is not a JSON value", body, i, got[i])
			}
			if !jsonEqual(got[i], want[i]) {
				t.Fatalf("%q: element %d = %s, encoding/json %s", body, i, got[i], want[i])
			}
		}
	})
}

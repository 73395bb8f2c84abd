package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
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
		p, e := ParseObject(body)
		if e != nil {
			return // refused; json.Unmarshal may accept duplicates, we do not
		}
		wantJSONMembers(t, body, p)
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
		got, more := ArrayElems(bytes.TrimSpace(body), limit)
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

// TestParseObject pins what the body splitter refuses and with which
// description, where the order of checks decides it: a body that is not
// JSON at all is malformed before it is "not an object" or has a
// duplicate; keys are compared after unescaping; nesting is bounded.
func TestParseObject(t *testing.T) {
	nest := func(n int) string {
		return `{"a":` + strings.Repeat(`{"b":`, n) + "1" + strings.Repeat(`}`, n) + `}`
	}
	for _, c := range []struct {
		name, body string
		members    int    // when accepted
		desc       string // when refused
	}{
		{"empty object", `{}`, 0, ""},
		{"white space around", " {\"a\":1}\r\n\t", 1, ""},
		{"members", `{"a":"x","b":[1,{"c":null}],"d":{"e":"}"},"f":-1.5e3,"g":true}`, 5, ""},
		{"nested to the bound", nest(maxDepth), 1, ""},
		{"nested past the bound", nest(maxDepth + 1), 0, descMalformedJSON},
		{"arrays nested to the bound", `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, 1, ""},
		{"arrays nested past the bound", `{"a":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`, 0, descMalformedJSON},
		{"nested past the bound, then a duplicate", `{"a":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `,"a":1}`, 0, descMalformedJSON},
		{"duplicate, then nested past the bound", `{"a":1,"a":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`, 0, "Duplicate parameter a"},
		{"lone surrogate escape", `{"a":"\ud800"}`, 1, ""},
		{"white space only", " ", 0, descMalformedJSON},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", 0, descMalformedJSON},
		{"truncated", `{"credentialID":`, 0, descMalformedJSON},
		{"trailing value", `{} {}`, 0, descMalformedJSON},
		{"trailing garbage", `{"a":1} x`, 0, descMalformedJSON},
		{"array", `[1]`, 0, descNotObject},
		{"string", `"x"`, 0, descNotObject},
		{"array then garbage", `[1] x`, 0, descMalformedJSON},
		{"truncated array", `[1,`, 0, descMalformedJSON},
		{"duplicate", `{"a":1,"a":2}`, 0, "Duplicate parameter a"},
		{"duplicate escaped", `{"SAD":"x","\u0053AD":"y"}`, 0, "Duplicate parameter SAD"},
		{"duplicate nested", `{"a":{"b":1,"b":2}}`, 0, "Duplicate parameter b"},
		{"duplicate in an array", `{"a":[{"x":1,"x":2}]}`, 0, "Duplicate parameter x"},
		{"duplicate then malformed", `{"a":1,"a":2,}`, 0, descMalformedJSON},
		{"nested duplicate then malformed", `{"a":{"b":1,"b":2},"c":}`, 0, descMalformedJSON},
		{"duplicate unprintable", `{"a~1b/":1,"a~1b/":2}`, 0, "Duplicate parameter (unprintable name)"},
		{"duplicate empty name", `{"":1,"":2}`, 0, "Duplicate parameter (unprintable name)"},
		{"duplicate lone surrogates", `{"\ud800":1,"\udc00":2}`, 0, "Duplicate parameter (unprintable name)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, e := ParseObject([]byte(c.body))
			switch {
			case e != nil && e.Description != c.desc:
				t.Fatalf("%q refused with %q, want %q", c.body, e.Description, c.desc)
			case e == nil && c.desc != "":
				t.Fatalf("%q accepted, want %q", c.body, c.desc)
			case e == nil && len(p) != c.members:
				t.Fatalf("%q: %d members, want %d", c.body, len(p), c.members)
			}
		})
	}
}

// FuzzJSONString checks jsonString against encoding/json: the same string
// and the same verdict for any JSON value that starts with a quote (its
// callers refuse every other kind, null included, before decoding).
func FuzzJSONString(f *testing.F) {
	for _, seed := range []string{
		`"abc"`, `""`, `"AAAA+/=="`, `"a\"b"`, `"\u0041"`, `"\ud800"`, `"é"`, "\"a\tb\"",
		`"a\\"`, `"`, `x`, `1`, `null`, `["a"]`, `"a"b"`, `"a`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return
		}
		got, ok := JSONString(v)
		var want string
		err := json.Unmarshal(v, &want)
		if ok != (err == nil && v[0] == '"') || ok && got != want {
			t.Errorf("jsonString(%q) = %q, %v; encoding/json: %q, %v", v, got, ok, want, err)
		}
	})
}

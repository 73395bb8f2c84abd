package cliinput

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// FuzzParseClaims reads `signd user add --claims FILE` files. An accepted
// file is one JSON object of string values without repeated keys or
// trailing data: encoding/json reads the same map from it, every member of
// the object is in the map, and the map written back parses to itself.
func FuzzParseClaims(f *testing.F) {
	for _, s := range []string{
		`{"given_name":"Alice","last_name":"Jansen","birthdate":"1990-02-03","birthplace":"Utrecht","nationality":"NL",` +
			`"document_type":"passport","id_number":"NXC8R1234","id_document_issuance_date":"2020-12-01"}`,
		`{}`, ` { "given_name" : "Al\u00efce" } `, `{"a":"1","a":"2"}`, `{"a":1}`, `{"a":{"b":"c"}}`, `{"a":"b"} x`,
		`{"a":"b"}{}`, `[]`, `"x"`, ``, `{"a":"b"`, `{"a":null}`, "\xef\xbb\xbf{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseClaims(data)
		if err != nil {
			if got != nil || err.Error() == "" {
				t.Fatalf("%q: %v with %v", data, err, got)
			}
			return
		}
		var want map[string]string
		if err := json.Unmarshal(data, &want); err != nil || want == nil {
			t.Fatalf("%q accepted, encoding/json: %v", data, err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%q: read %v, encoding/json %v", data, got, want)
		}
		// Every member counted: no key was given twice.
		dec := json.NewDecoder(bytes.NewReader(data))
		members := 0
		for depth := 0; ; {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('{'):
				depth++
			case json.Delim('}'):
				depth--
			default:
				if depth == 1 {
					members++ // keys and values at depth 1
				}
			}
		}
		if members/2 != len(got) {
			t.Fatalf("%q: %d members, %d claims read", data, members/2, len(got))
		}
		again, _ := json.Marshal(got)
		if back, err := ParseClaims(again); err != nil || !maps.Equal(back, got) {
			t.Fatalf("%q written back as %s: %v, %v", data, again, back, err)
		}
		if strings.TrimSpace(string(data)) == "" {
			t.Fatalf("empty file accepted")
		}
	})
}

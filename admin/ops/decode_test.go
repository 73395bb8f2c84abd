package ops

import (
	"context"
	"strings"
	"testing"
)

// TestCallRefusesMalformedRequests: a request that is not exactly one JSON
// object of the operation's fields is KindInvalid, says what is wrong in
// JSON's words (never a Go type), and reaches no Service.
func TestCallRefusesMalformedRequests(t *testing.T) {
	add, _ := Lookup("AddClient")
	list, _ := Lookup("ListUsers")
	cred, _ := Lookup("CreateCredential")
	export, _ := Lookup("AuditExport")
	for _, tc := range []struct {
		name string
		op   Operation
		raw  string
		want string
	}{
		{"empty", add, ``, "malformed admin request: no JSON value; send {} when the operation takes no parameters"},
		{"cut off", add, `{"id":`, "malformed admin request: the JSON value is cut off"},
		{"not JSON", add, `{"id" "rp"}`, `malformed admin request: not valid JSON at byte 7`},
		{"a bad escape in a secret", add, `{"id":"rp","secret":"hunter2\qrest"}`, "malformed admin request: not valid JSON at byte 29"},
		{"a time that is not RFC 3339", export, `{"since":"yesterday"}`, "malformed admin request: a value does not fit its field (times are RFC 3339 strings, e.g. 2026-11-28T12:00:00Z)"},
		{"a time that is a number", export, `{"since":1}`, "malformed admin request: a value does not fit its field (times are RFC 3339 strings, e.g. 2026-11-28T12:00:00Z)"},
		{"an array", add, `["rp"]`, "malformed admin request: the body must be a JSON object"},
		{"a string", list, `"x"`, "malformed admin request: the body must be a JSON object"},
		{"field of the wrong type", add, `{"id":7}`, `malformed admin request: field "id" must be a string, not number`},
		{"array field given a string", add, `{"id":"rp","redirect_uris":"https://rp.example/cb"}`, `malformed admin request: field "redirect_uris" must be an array, not string`},
		{"number too large, not echoed", cred, `{"user":"alice","multisign":99999999999999999999}`, `malformed admin request: field "multisign" is out of range`},
		{"number as a string", cred, `{"user":"alice","multisign":"5"}`, `malformed admin request: field "multisign" must be a number, not string`},
		{"unknown field", add, `{"id":"rp","owner":"bob"}`, `malformed admin request: unknown field "owner"`},
		{"parameters where none are taken", list, `{"name":"x"}`, `malformed admin request: unknown field "name"`},
		{"a name in another case", add, `{"ID":"rp"}`, `malformed admin request: unknown field "ID"`},
		{"a name that folds to a field's (ſ is s)", cred, `{"uſer":"alice"}`, `malformed admin request: unknown field "uſer"`},
		{"a field twice", add, `{"id":"rp","id":"rq"}`, `malformed admin request: field "id" given twice`},
		{"a field twice, nested", add, `{"id":"rp","scopes":["service"],"id":"rq"}`, `malformed admin request: field "id" given twice`},
		{"not UTF-8", add, "{\"id\":\"r\xffp\"}", "malformed admin request: not valid JSON at byte 9"},
		{"null body", add, `null`, "malformed admin request: the body must be a JSON object"},
		{"two values", add, `{"id":"rp"} {"id":"rq"}`, "malformed admin request: data after the JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.op.Call(context.Background(), nil, Principal{}, []byte(tc.raw))
			if KindOf(err) != KindInvalid || err.Error() != tc.want {
				t.Fatalf("Call(%s) = %v (%s), want %s %q", tc.raw, err, KindOf(err), KindInvalid, tc.want)
			}
			if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "ops.") || strings.Contains(err.Error(), "2006-01-02") {
				t.Errorf("%q names a Go type or layout", err)
			}
			if strings.Contains(err.Error(), "'") || strings.Contains(err.Error(), "hunter") || strings.Contains(err.Error(), "yesterday") {
				t.Errorf("%q quotes the request's values", err)
			}
		})
	}
}

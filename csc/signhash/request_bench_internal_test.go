package signhash

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/signd/signd/csc/protocol"
)

// BenchmarkReadParams is the body path of a CSC request before its
// handler looks at the members: reading, checking and splitting a typical
// signHash body (then its parameters, as signHash reads them) and a
// typical credentials/list body.
func BenchmarkReadParams(b *testing.B) {
	for _, c := range []struct {
		name, body string
		signHash   bool
	}{
		{"signHash", signHashBodies[0], true},
		{"credentialsList", `{"userID":null,"maxResults":10,"clientData":"list-0123456789"}`, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			rd := bytes.NewReader(body)
			r := httptest.NewRequest(http.MethodPost, "/csc/v1/signatures/signHash", nil)
			r.Header.Set("Content-Type", "application/json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				r.Body = io.NopCloser(rd)
				p, e := protocol.ReadParams(r)
				if e != nil {
					b.Fatal(e.Description)
				}
				if c.signHash {
					if _, e := parseSignHash(p, 10); e != nil {
						b.Fatal(e.Description)
					}
				}
			}
		})
	}
}

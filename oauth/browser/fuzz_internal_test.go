package browser

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Real authorize requests (CSC service and credential scope, OIDC), as the
// flow tests and the CSC v1 §8 samples send them.
var authorizeQueries = []string{
	"response_type=code&client_id=rp&redirect_uri=https%3A%2F%2Frp.example%2Fcb&scope=service&state=12345678&lang=en",
	"response_type=code&client_id=rp&redirect_uri=https%3A%2F%2Frp.example%2Fcb&scope=credential&credentialID=GX0112348&numSignatures=1&hash=sTOgwOm%2BvYmXHpG7yKMnEA8aPSsT1rHwiWvJxSTnmqE%3D&state=12345678&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256",
	"response_type=code&client_id=rp&scope=openid+email+com.vendor.personal_info&state=s&nonce=n-0S6_WzA2Mj&prompt=login&max_age=3600&ui_locales=nl&login_hint=alice%40example.com",
	"response_type=code&client_id=rp&client_id=rp2&state=a", "state=%zz", "a=1;b=2", "scope=&state=", "",
}

// FuzzAuthorizeParams reads /oauth2/authorize parameters from a GET query
// or a POST body (readParams): every parameter given once with a value is
// kept with that value, every parameter given more than once is reported
// (sorted, once) and not kept, and empty ones count as omitted (RFC 6749
// §3.1). Nothing else is invented.
func FuzzAuthorizeParams(f *testing.F) {
	for _, q := range authorizeQueries {
		f.Add(false, q, "", "")
		f.Add(true, "", "application/x-www-form-urlencoded", q)
	}
	f.Add(true, "x=%zz", "application/x-www-form-urlencoded", "client_id=rp")
	f.Add(true, "", "application/json", `{"client_id":"rp"}`)
	f.Fuzz(func(t *testing.T, post bool, rawQuery, ct, body string) {
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: pathAuthorize, RawQuery: rawQuery}, Header: http.Header{}}
		if post {
			r.Method = http.MethodPost
			r.Body = io.NopCloser(strings.NewReader(body))
			if ct != "" {
				r.Header.Set("Content-Type", ct)
			}
		}
		params, dups, err := readParams(r)
		var src url.Values
		if post {
			ref := r.Clone(context.Background())
			ref.Body, ref.PostForm, ref.Form = io.NopCloser(strings.NewReader(body)), nil, nil
			if rerr := ref.ParseForm(); (rerr == nil) != (err == nil) {
				t.Fatalf("readParams: %v, net/http: %v", err, rerr)
			}
			src = ref.PostForm
		} else {
			var rerr error
			src, rerr = url.ParseQuery(rawQuery)
			if (rerr == nil) != (err == nil) {
				t.Fatalf("readParams(%q): %v, url.ParseQuery: %v", rawQuery, err, rerr)
			}
		}
		if err != nil {
			return
		}
		if !slices.IsSorted(dups) || len(slices.Compact(slices.Clone(dups))) != len(dups) {
			t.Fatalf("duplicates %q not sorted and unique", dups)
		}
		for k, vs := range src {
			switch {
			case len(vs) > 1:
				if !slices.Contains(dups, k) || params.Has(k) {
					t.Fatalf("%q given %d times: dups %q, params %q", k, len(vs), dups, params[k])
				}
			case vs[0] == "":
				if params.Has(k) || slices.Contains(dups, k) {
					t.Fatalf("empty %q kept", k)
				}
			default:
				if got := params[k]; len(got) != 1 || got[0] != vs[0] || slices.Contains(dups, k) {
					t.Fatalf("%q = %q read as %q", k, vs[0], got)
				}
			}
		}
		for k := range params {
			if _, ok := src[k]; !ok {
				t.Fatalf("parameter %q invented", k)
			}
		}
		for _, k := range dups {
			if len(src[k]) < 2 {
				t.Fatalf("%q reported as duplicated", k)
			}
		}
	})
}

package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest/backends"
)

// FuzzReadForm reads token and revocation request bodies: a refusal is an
// invalid_request *Error with a printable description (or the server's
// body limit); an accepted body was declared form-urlencoded and holds
// exactly the single, non-empty values url.ParseQuery reads from it.
func FuzzReadForm(f *testing.F) {
	for _, b := range []string{
		"grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA&redirect_uri=https%3A%2F%2Frp.example%2Fcb",
		"grant_type=authorization_code&code=c&client_id=rp&client_secret=s3cr3t&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
		"token=45ghiukldjahdnhzdauz&token_type_hint=access_token",
		"code=a&code=b", "a=%zz", "a=1;b=2", "=x&y=", "",
	} {
		f.Add("application/x-www-form-urlencoded", b, 0)
	}
	f.Add("application/x-www-form-urlencoded;charset=UTF-8", "grant_type=x", 0)
	f.Add(" Application/X-WWW-Form-Urlencoded ; x=y", "grant_type=x", 0)
	f.Add("application/json", `{"grant_type":"authorization_code"}`, 0)
	f.Add("", "grant_type=x", 0)
	f.Add("application/x-www-form-urlencoded", "grant_type=authorization_code&code=long", 8)
	f.Fuzz(func(t *testing.T, ct, body string, limit int) {
		r := httptest.NewRequest(http.MethodPost, pathToken, strings.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if limit > 0 {
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, int64(limit))
		}
		form, err := readForm(r)
		if err != nil {
			var oe *Error
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &mbe):
				if limit <= 0 || len(body) <= limit {
					t.Fatalf("body limit error for %d bytes, limit %d", len(body), limit)
				}
			case !errors.As(err, &oe):
				t.Fatalf("%q: error %T %v is not an *Error", body, err, err)
			case oe.Code != CodeInvalidRequest || oe.Status != http.StatusBadRequest || oe.Description == "" ||
				safeDescription(oe.Description) != oe.Description:
				t.Fatalf("%q: refused with %d %s %q", body, oe.Status, oe.Code, oe.Description)
			}
			return
		}
		mt, _, _ := strings.Cut(ct, ";")
		if !strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
			t.Fatalf("body accepted with Content-Type %q", ct)
		}
		if limit > 0 && len(body) > limit {
			t.Fatalf("%d bytes accepted past the limit %d", len(body), limit)
		}
		ref, rerr := url.ParseQuery(body)
		if rerr != nil {
			t.Fatalf("%q accepted, url.ParseQuery: %v", body, rerr)
		}
		for k, vs := range ref {
			switch {
			case len(vs) > 1:
				t.Fatalf("%q: %q given twice accepted", body, k)
			case vs[0] == "" && form.Has(k), vs[0] != "" && form.Get(k) != vs[0]:
				t.Fatalf("%q: %q = %q read as %q", body, k, vs[0], form[k])
			}
		}
		for k, vs := range form {
			if len(vs) != 1 || len(ref[k]) != 1 {
				t.Fatalf("%q: %q read as %q", body, k, vs)
			}
		}
	})
}

// bearerMessages are the only error_description texts of a malformed
// bearer request (RFC 6750 §3.1 invalid_request).
var bearerMessages = []string{
	"Authorization header is not a Bearer token", "Malformed Bearer token", "More than one Authorization header",
	"Malformed form body", "access_token given more than once", "Bearer token given in both the header and the body",
}

// FuzzBearerToken extracts RFC 6750 bearer tokens from one or two
// Authorization headers and, where allowed, a form body: a token returned
// is a b64token (§2.1) of at most 4096 bytes taken verbatim from the single
// "Bearer" credential or the single access_token field; a well-formed
// single credential is always found; a refusal is one of the fixed
// descriptions.
func FuzzBearerToken(f *testing.F) {
	for _, h := range []string{"", "Bearer good", "bearer good", "BEARER  x.y-z_~+/==", "Basic Z29vZA==", "Bearer ", "Bearer a b", "Bearer\tx", "Bearer " + strings.Repeat("a", 4097)} {
		f.Add(h, "", false, "", false)
	}
	f.Add("Bearer good", "Bearer good", false, "", false)
	f.Add("", "", true, "access_token=good", true)
	f.Add("Bearer good", "", true, "access_token=good", true)
	f.Add("", "", true, "access_token=good&access_token=good", true)
	f.Add("", "", true, "access_token=%zz", true)
	f.Fuzz(func(t *testing.T, h1, h2 string, post bool, form string, allowForm bool) {
		r := httptest.NewRequest(http.MethodGet, "/csc/v1/credentials/list", nil)
		if post {
			r = httptest.NewRequest(http.MethodPost, "/userinfo", strings.NewReader(form))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		var headers []string
		for _, h := range []string{h1, h2} {
			if h != "" {
				r.Header.Add("Authorization", h)
				headers = append(headers, h)
			}
		}
		tok, err := bearerToken(r, allowForm)
		if err != nil {
			if tok != "" || !slices.Contains(bearerMessages, err.Error()) {
				t.Fatalf("%q: %q, %v", headers, tok, err)
			}
			return
		}
		if len(headers) > 1 {
			t.Fatalf("two Authorization headers accepted: %q", headers)
		}
		fromForm := ""
		if post && allowForm {
			if v, perr := url.ParseQuery(form); perr == nil && len(v["access_token"]) == 1 {
				fromForm = v.Get("access_token")
			}
		}
		var fromHeader string
		if len(headers) == 1 {
			scheme, v, _ := strings.Cut(headers[0], " ")
			if !strings.EqualFold(scheme, "Bearer") {
				t.Fatalf("scheme %q accepted", scheme)
			}
			fromHeader = strings.TrimSpace(v)
		}
		switch {
		case tok == "":
			if fromHeader != "" || fromForm != "" {
				t.Fatalf("%q / %q: no token found", headers, form)
			}
		case tok != fromHeader && tok != fromForm, fromHeader != "" && fromForm != "":
			t.Fatalf("%q / %q: token %q", headers, form, tok)
		case len(tok) > 4096 || strings.TrimLeft(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/=") != "":
			t.Fatalf("token %q is not a b64token", tok)
		}
	})
}

// fuzzProfile is the only profile of the token endpoint fuzz server; no
// code ever exists, so only Info and Match are called.
type fuzzProfile struct{}

func (fuzzProfile) Info() ProfileInfo          { return ProfileInfo{Name: "fuzz"} }
func (fuzzProfile) Match(scopes []string) bool { return slices.Contains(scopes, "fuzz") }
func (fuzzProfile) Authorize(context.Context, *AuthorizeRequest) (*Authorization, error) {
	return nil, errors.New("fuzz profile: no flows")
}
func (fuzzProfile) CheckUser(context.Context, *Request) error {
	return errors.New("fuzz profile: no flows")
}
func (fuzzProfile) Consent(context.Context, *Request) (*Consent, error) {
	return nil, errors.New("fuzz profile: no flows")
}
func (fuzzProfile) Issue(*Request) (*Issuance, error) {
	return nil, errors.New("fuzz profile: no flows")
}
func (fuzzProfile) TokenResponse(context.Context, *Request, *IssuedToken) (map[string]any, error) {
	return nil, errors.New("fuzz profile: no flows")
}

// The registered clients of the token endpoint fuzz server: one plain, one
// whose ID needs form-urlencoding in Basic credentials.
const (
	fuzzClient       = "rp"
	fuzzClientSecret = "Oh0pWkSN6aJ_K2Y5yP0qVJcvkLxsnR3yG7iEmG3mRrw"
	fuzzOddClient    = "rp:2+x%"
	fuzzOddSecret    = "s:+%3A/secret-0123456789abcdefghijklmnopqrs"
	fuzzIssuer       = "https://signd.example"
)

// FuzzTokenEndpoint posts any Authorization header and body to the real
// /oauth2/token over an in-memory store with two registered clients. Whatever
// arrives, the answer is RFC 6749 §5.2 JSON with no-store, 400 or 401
// (never 5xx: no code exists); invalid_client is exactly the 401s, with
// WWW-Authenticate: Basic when the client tried Basic and only then. The
// client authentication agrees with a reference reading: a request that
// carries a client's id and secret (RFC 6749 §2.3.1 Basic, read with
// net/http's BasicAuth and form-decoded, or the form body) gets past it,
// and one that gets past it carried the secret.
func FuzzTokenEndpoint(f *testing.F) {
	db := backends.Memory(f, memory.Options{})
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for id, secret := range map[string]string{fuzzClient: fuzzClientSecret, fuzzOddClient: fuzzOddSecret} {
			if err := tx.CreateClient(&store.Client{ID: id, SecretHash: store.HashSecret(secret),
				RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"fuzz"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := New(Config{Store: store.Scope(db, func(tx store.Tx) Tx { return tx }), Profiles: []Profile{fuzzProfile{}}, Issuer: fuzzIssuer})
	if err != nil {
		f.Fatal(err)
	}
	e := echo.New()
	e.HTTPErrorHandler = NewRenderer(nil).Handle
	if err := srv.Mount(e.Group("")); err != nil {
		f.Fatal(err)
	}

	basic := func(id, secret string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
	}
	form := "application/x-www-form-urlencoded"
	grant := "grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA&redirect_uri=https%3A%2F%2Frp.example%2Fcb"
	for _, s := range []struct{ auth, ct, body string }{
		{basic(fuzzClient, fuzzClientSecret), form, grant},
		{basic(fuzzOddClient, fuzzOddSecret), form, grant + "&client_id=" + url.QueryEscape(fuzzOddClient)},
		{"", form, grant + "&client_id=rp&client_secret=" + fuzzClientSecret},
		{basic(fuzzClient, fuzzClientSecret), form, grant + "&client_id=rp&client_secret=" + fuzzClientSecret},
		{basic(fuzzClient, fuzzClientSecret), form, grant + "&client_secret=wrong"},
		{basic(fuzzClient, "wrong"), form, grant},
		{"Basic !!!notbase64", form, grant},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("rp:%zz")), form, grant},
		{"Bearer " + fuzzClientSecret, form, grant},
		{basic(fuzzClient, fuzzClientSecret), form, "grant_type=client_credentials"},
		{basic(fuzzClient, fuzzClientSecret), form, "grant_type=authorization_code&code=a&code=b"},
		{basic(fuzzClient, fuzzClientSecret), "application/json", `{"grant_type":"authorization_code"}`},
	} {
		f.Add(s.auth, s.ct, s.body)
	}
	f.Fuzz(func(t *testing.T, auth, ct, body string) {
		req := httptest.NewRequest(http.MethodPost, pathToken, strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		var res struct {
			Error string `json:"error"`
			Desc  string `json:"error_description"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("%d %q: not JSON", rec.Code, rec.Body)
		}
		if rec.Header().Get("Cache-Control") != "no-store" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("headers %v", rec.Header())
		}
		if safeDescription(res.Desc) != res.Desc {
			t.Fatalf("description %q", res.Desc)
		}
		challenge := rec.Header().Get("Www-Authenticate")
		switch {
		case rec.Code == http.StatusUnauthorized && res.Error == CodeInvalidClient:
			if want := `Basic realm="` + fuzzIssuer + `"`; (auth != "") != (challenge == want) || auth == "" && challenge != "" {
				t.Fatalf("401 with WWW-Authenticate %q (Authorization %q)", challenge, auth)
			}
		case rec.Code == http.StatusBadRequest && slices.Contains([]string{CodeInvalidRequest, CodeInvalidGrant, CodeUnsupportedGrantType}, res.Error):
			if challenge != "" {
				t.Fatalf("400 with WWW-Authenticate %q", challenge)
			}
		default:
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}

		// The reference reading of the request's client credentials.
		values, ferr := url.ParseQuery(body)
		mt, _, merr := mime.ParseMediaType(ct)
		formOK := ferr == nil && merr == nil && mt == form
		for _, vs := range values {
			formOK = formOK && len(vs) == 1
		}
		passed := rec.Code == http.StatusBadRequest && (res.Error != CodeInvalidRequest ||
			strings.HasPrefix(res.Desc, "Missing parameter") || res.Desc == "Invalid parameter code_verifier")
		if !formOK {
			if passed {
				t.Fatalf("%q / %q: a malformed body got past client authentication: %s", ct, body, rec.Body)
			}
			return
		}
		secrets := map[string]string{fuzzClient: fuzzClientSecret, fuzzOddClient: fuzzOddSecret}
		id, secret, viaBasic := (&http.Request{Header: http.Header{"Authorization": {auth}}}).BasicAuth()
		if viaBasic {
			var err1, err2 error
			id, err1 = url.QueryUnescape(id)
			secret, err2 = url.QueryUnescape(secret)
			viaBasic = err1 == nil && err2 == nil
		}
		formID, formSecret := values.Get("client_id"), values.Get("client_secret")
		registered := func(id, secret string) bool { s, ok := secrets[id]; return ok && s == secret }
		good := false
		switch {
		case auth == "":
			good = registered(formID, formSecret)
		case viaBasic:
			good = registered(id, secret) && (formID == "" || formID == id) && (formSecret == "" || formSecret == secret)
		}
		if good && !passed {
			t.Fatalf("%q / %q: the client's credentials were refused: %d %s", auth, body, rec.Code, rec.Body)
		}
		if passed && !good && !carriesSecret(auth, formSecret) {
			t.Fatalf("%q / %q: authenticated without a client secret: %s", auth, body, rec.Body)
		}
	})
}

// carriesSecret reports whether a registered client secret is in the form
// or in the base64 and form-urlencoded Basic credentials of auth, however
// they are spelt (the server is lenient on scheme case and white space).
func carriesSecret(auth, formSecret string) bool {
	for _, s := range []string{fuzzClientSecret, fuzzOddSecret} {
		if formSecret == s {
			return true
		}
		_, rest, _ := strings.Cut(auth, " ")
		for _, field := range append(strings.Fields(auth), strings.Join(strings.Fields(rest), "")) {
			raw, err := base64.StdEncoding.DecodeString(field)
			if err != nil {
				continue
			}
			if _, p, ok := strings.Cut(string(raw), ":"); ok {
				if v, err := url.QueryUnescape(p); err == nil && v == s {
					return true
				}
			}
		}
	}
	return false
}

package oauth

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"text/template"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/store"
)

// errTokenBusy stands for an HSM error a protocol's mapping knows as "try
// again later"; its text is internal detail.
var errTokenBusy = errors.New("hsm: all sessions busy (CKR_SESSION_COUNT on slot 0)")

// signerDialect is a protocol dialect with its own mapping, as the CSC API
// and the OpenID provider have theirs.
func signerDialect() *Dialect {
	return &Dialect{Name: "test", Format: FormatJSONUTF8, Map: func(err error) *Error {
		if errors.Is(err, errTokenBusy) {
			return &Error{Code: CodeTemporarilyUnavailable, Status: http.StatusServiceUnavailable,
				Description: "The signer is busy, try again later", Header: http.Header{"Retry-After": {"5"}}}
		}
		return nil
	}}
}

func TestRenderer(t *testing.T) {
	const (
		realm    = "https://signd.example"
		internal = "open /var/lib/signd/signd.db: permission denied"
		diskFull = "write signd.db: no space left on device"
	)
	errs := map[string]error{
		"bearer":   BearerError(realm, CodeInvalidToken, "The access token is invalid or revoked", http.StatusUnauthorized),
		"echo404":  echo.NewHTTPError(http.StatusNotFound),
		"tooLarge": fmt.Errorf("read body: %w", &http.MaxBytesError{Limit: 1024}),
		"store":    fmt.Errorf("%w: %s", store.ErrUnavailable, diskFull),
		"hsm":      fmt.Errorf("sign: %w", errTokenBusy),
		"internal": errors.New(internal),
	}
	challenge := `Bearer realm="https://signd.example", error="invalid_token", error_description="The access token is invalid or revoked"`
	const (
		jsonCT   = "application/json"
		utf8CT   = "application/json;charset=UTF-8"
		htmlCT   = "text/html; charset=UTF-8"
		revoked  = `{"error":"invalid_token","error_description":"The access token is invalid or revoked"}`
		noStore  = `{"error":"temporarily_unavailable","error_description":"The service cannot store the request now, try again later"}`
		location = "https://rp.example/cb?error="
		iss      = "&iss=https%3A%2F%2Fsignd.example&state=xyz"
	)
	type want struct {
		status int
		header map[string]string // "" = absent
		body   string            // JSON: exact; page: message key; redirect: Location
	}
	h := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	oauthJSON := func(kv ...string) map[string]string {
		return h(append([]string{"Content-Type", utf8CT, "Cache-Control", "no-store", "Pragma", "no-cache"}, kv...)...)
	}
	tests := []struct {
		dialect string // "" = a request no route tagged
		err     string
		want    want
	}{
		// The daemon's own endpoints: JSON, Echo's message as description.
		{"", "bearer", want{401, h("Content-Type", jsonCT, "Www-Authenticate", challenge), revoked + "\n"}},
		{"", "echo404", want{404, h("Content-Type", jsonCT), `{"error":"not_found","error_description":"Not Found"}` + "\n"}},
		{"", "tooLarge", want{413, h("Content-Type", jsonCT), `{"error":"invalid_request","error_description":"request body larger than 1024 bytes"}` + "\n"}},
		{"", "store", want{503, h("Content-Type", jsonCT, "Retry-After", RetryAfter), noStore + "\n"}},
		{"", "hsm", want{500, h("Content-Type", jsonCT, "Retry-After", ""), `{"error":"server_error","error_description":"internal error"}` + "\n"}},
		{"", "internal", want{500, h("Content-Type", jsonCT), `{"error":"server_error","error_description":"internal error"}` + "\n"}},

		// The token and revocation endpoints: RFC 6749 §5.2.
		{"token", "bearer", want{401, oauthJSON("Www-Authenticate", challenge), revoked}},
		{"token", "echo404", want{404, oauthJSON(), `{"error":"invalid_request","error_description":"Invalid request"}`}},
		{"token", "tooLarge", want{413, oauthJSON(), `{"error":"invalid_request","error_description":"Request body too large"}`}},
		{"token", "store", want{503, oauthJSON("Retry-After", RetryAfter), noStore}},
		{"token", "hsm", want{500, oauthJSON("Retry-After", ""), `{"error":"server_error","error_description":"Internal error"}`}},
		{"token", "internal", want{500, oauthJSON(), `{"error":"server_error","error_description":"Internal error"}`}},

		// A protocol with its own mapping (CSC, OIDC): the HSM's "busy" is
		// 503 with its Retry-After.
		{"signer", "bearer", want{401, h("Content-Type", utf8CT, "Www-Authenticate", challenge, "Pragma", ""), revoked}},
		{"signer", "echo404", want{500, h("Content-Type", utf8CT), `{"error":"server_error"}`}},
		{"signer", "tooLarge", want{500, h("Content-Type", utf8CT), `{"error":"server_error"}`}},
		{"signer", "store", want{503, h("Content-Type", utf8CT, "Retry-After", RetryAfter), noStore}},
		{"signer", "hsm", want{503, h("Content-Type", utf8CT, "Retry-After", "5"), `{"error":"temporarily_unavailable","error_description":"The signer is busy, try again later"}`}},
		{"signer", "internal", want{500, h("Content-Type", utf8CT), `{"error":"server_error"}`}},

		// The browser endpoints: the HTML error page.
		{"page", "bearer", want{500, h("Content-Type", htmlCT, "Www-Authenticate", ""), "errorpage.server"}},
		{"page", "echo404", want{404, h("Content-Type", htmlCT), "errorpage.request"}},
		{"page", "tooLarge", want{500, h("Content-Type", htmlCT), "errorpage.server"}},
		{"page", "store", want{503, h("Content-Type", htmlCT, "Retry-After", RetryAfter), "errorpage.later"}},
		{"page", "hsm", want{500, h("Content-Type", htmlCT, "Retry-After", ""), "errorpage.server"}},
		{"page", "internal", want{500, h("Content-Type", htmlCT), "errorpage.server"}},

		// A flow past the redirect URI check: a redirect to the client.
		{"redirect", "bearer", want{302, h("Www-Authenticate", "", "Cache-Control", "no-store"), location + "invalid_token&error_description=The+access+token+is+invalid+or+revoked" + iss}},
		{"redirect", "echo404", want{302, h(), location + "server_error&error_description=Internal+error" + iss}},
		{"redirect", "tooLarge", want{302, h(), location + "server_error&error_description=Internal+error" + iss}},
		{"redirect", "store", want{302, h("Retry-After", ""), location + "temporarily_unavailable&error_description=The+service+cannot+store+the+request+now%2C+try+again+later" + iss}},
		{"redirect", "hsm", want{302, h(), location + "server_error&error_description=Internal+error" + iss}},
		{"redirect", "internal", want{302, h(), location + "server_error&error_description=Internal+error" + iss}},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+"/"+tt.err, func(t *testing.T) {
			var logs bytes.Buffer
			r := NewRenderer(slog.New(slog.NewTextHandler(&logs, nil)))
			err := errs[tt.err]
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/x", nil), rec)
			switch tt.dialect {
			case "token":
				c.Set(dialectKey, tokenDialect())
			case "signer":
				c.Set(dialectKey, signerDialect())
			case "page":
				c.Set(dialectKey, PageDialect())
			case "redirect":
				c.Set(dialectKey, PageDialect())
				err = &redirectError{to: Target{RedirectURI: "https://rp.example/cb", State: "xyz", Status: http.StatusFound}, issuer: realm, err: err}
			}
			r.Handle(err, c)

			if rec.Code != tt.want.status {
				t.Errorf("status %d, want %d", rec.Code, tt.want.status)
			}
			for k, v := range tt.want.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			switch tt.dialect {
			case "page":
				if !strings.Contains(rec.Body.String(), template.HTMLEscapeString(pages.Msg(pages.NL, tt.want.body))) {
					t.Errorf("the page does not say %s:\n%s", tt.want.body, rec.Body)
				}
			case "redirect":
				if got := rec.Header().Get("Location"); got != tt.want.body {
					t.Errorf("Location %s\nwant     %s", got, tt.want.body)
				}
			default:
				if rec.Body.String() != tt.want.body {
					t.Errorf("body %s\nwant %s", rec.Body, tt.want.body)
				}
			}

			// Internal detail is logged, never sent.
			sent := rec.Body.String() + fmt.Sprint(rec.Header())
			for _, leak := range []string{internal, diskFull, "CKR_", "permission"} {
				if strings.Contains(sent, leak) {
					t.Errorf("the response leaks %q:\n%s", leak, sent)
				}
			}
			if rec.Code >= 500 && !errors.As(err, new(*Error)) && !strings.Contains(logs.String(), err.Error()) {
				t.Errorf("%v not logged:\n%s", err, logs.String())
			}
			if rec.Code < 500 && tt.dialect != "redirect" && logs.Len() > 0 {
				t.Errorf("a client error was logged:\n%s", logs.String())
			}
		})
	}
}

// TestRendererHEAD: a HEAD request gets the status and headers, no body.
func TestRendererHEAD(t *testing.T) {
	for _, d := range []*Dialect{nil, tokenDialect(), signerDialect()} {
		rec := httptest.NewRecorder()
		c := echo.New().NewContext(httptest.NewRequest(http.MethodHead, "/x", nil), rec)
		if d != nil {
			c.Set(dialectKey, d)
		}
		NewRenderer(nil).Handle(fmt.Errorf("%w: disk full", store.ErrUnavailable), c)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != RetryAfter || rec.Body.Len() != 0 {
			t.Errorf("%v: %d %v %q", d, rec.Code, rec.Header(), rec.Body)
		}
	}
}

// TestRendererCommitted: an error after the response was sent changes
// nothing and is logged once, however often Echo hands it over.
func TestRendererCommitted(t *testing.T) {
	var logs bytes.Buffer
	r := NewRenderer(slog.New(slog.NewTextHandler(&logs, nil)))
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/x", nil), rec)
	_ = c.String(http.StatusOK, "partial")
	for range 2 {
		r.Handle(errors.New("write: broken pipe"), c)
	}
	if rec.Code != http.StatusOK || rec.Body.String() != "partial" {
		t.Errorf("%d %q", rec.Code, rec.Body)
	}
	if n := strings.Count(logs.String(), "broken pipe"); n != 1 {
		t.Errorf("logged %d times:\n%s", n, logs.String())
	}

	// The renderer's own answer, handed over again: no log at all.
	logs.Reset()
	rec = httptest.NewRecorder()
	c = echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/x", nil), rec)
	for range 2 {
		r.Handle(echo.ErrNotFound, c)
	}
	if rec.Code != http.StatusNotFound || logs.Len() != 0 {
		t.Errorf("%d, log:\n%s", rec.Code, logs.String())
	}
}

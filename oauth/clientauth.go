package oauth

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
)

// clientRequest begins a request of a client at the token or revocation
// endpoint: the answer is marked not to be cached (RFC 6749 §5.1), the form
// body read (readForm) and the client authenticated (authenticateClient).
func (s *Server) clientRequest(c echo.Context) (url.Values, *store.Client, error) {
	noStore(c.Response().Header())
	form, err := readForm(c.Request())
	if err != nil {
		return nil, nil, err
	}
	client, err := s.authenticateClient(c, form)
	if err != nil {
		return nil, nil, err
	}
	return form, client, nil
}

// authenticateClient authenticates the client of a token or revocation
// request (RFC 6749 §2.3.1):
//   - client_secret_basic: id and secret form-urlencoded, joined by ':',
//     base64 in an Authorization: Basic header;
//   - client_secret_post: client_id and client_secret in the form body.
//
// Basic plus a body client_secret is accepted only when both carry the same
// secret; a body client_id must name the client Basic authenticated. Every
// failure is 401 invalid_client, with WWW-Authenticate: Basic when the
// client tried Basic. Secrets are compared in constant time, and an unknown
// client costs the same comparison.
func (s *Server) authenticateClient(c echo.Context, form url.Values) (*store.Client, error) {
	r := c.Request()
	hs := r.Header.Values("Authorization")
	basic := len(hs) > 0
	fail := func(desc string) *Error {
		e := &Error{Code: CodeInvalidClient, Description: desc, Status: http.StatusUnauthorized}
		if basic {
			e.Header = http.Header{"Www-Authenticate": {`Basic realm="` + s.issuer + `"`}}
		}
		return e
	}
	var id, secret string
	if basic {
		if len(hs) > 1 {
			return nil, fail("More than one Authorization header")
		}
		scheme, value, _ := strings.Cut(hs[0], " ")
		if !strings.EqualFold(scheme, "Basic") {
			return nil, fail("Client authentication must use HTTP Basic or the form body")
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
		if err != nil {
			return nil, fail("Malformed Basic credentials")
		}
		u, p, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, fail("Malformed Basic credentials")
		}
		if id, err = url.QueryUnescape(u); err != nil {
			return nil, fail("Malformed Basic credentials")
		}
		if secret, err = url.QueryUnescape(p); err != nil {
			return nil, fail("Malformed Basic credentials")
		}
		if form.Has("client_secret") && !sameSecret(form.Get("client_secret"), secret) {
			return nil, fail("Client credentials in the header and the body differ")
		}
		if form.Has("client_id") && form.Get("client_id") != id {
			return nil, fail("client_id does not match the authenticated client")
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
		if id == "" || secret == "" {
			return nil, fail("Client authentication is required")
		}
	}
	client, err := s.Client(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if client == nil {
		store.CheckSecret(s.dummySecret, secret)
		return nil, fail("Client authentication failed")
	}
	if !store.CheckSecret(client.SecretHash, secret) {
		return nil, fail("Client authentication failed")
	}
	return client, nil
}

// readForm parses a POST application/x-www-form-urlencoded body into single
// values: a duplicated parameter is invalid_request, empty ones count as
// omitted.
func readForm(r *http.Request) (url.Values, error) {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	if !strings.EqualFold(strings.TrimSpace(ct), "application/x-www-form-urlencoded") {
		return nil, Errorf(CodeInvalidRequest, http.StatusBadRequest, "Content-Type must be application/x-www-form-urlencoded")
	}
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, Errorf(CodeInvalidRequest, http.StatusBadRequest, "Malformed form body")
	}
	form := url.Values{}
	for k, vs := range r.PostForm {
		if len(vs) > 1 {
			return nil, Errorf(CodeInvalidRequest, http.StatusBadRequest, "Parameter %s is duplicated", safeName(k))
		}
		if vs[0] != "" {
			form.Set(k, vs[0])
		}
	}
	return form, nil
}

// safeName keeps a parameter name printable for an error description.
func safeName(k string) string {
	if len(k) > 40 {
		k = k[:40]
	}
	return safeDescription(k)
}

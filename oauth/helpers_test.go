package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func b64std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// rawToken posts form to the token endpoint with a literal Authorization
// header.
func (ev *env) rawToken(form url.Values, authorization string) (*http.Response, map[string]any) {
	ev.t.Helper()
	return ev.rawRequest("/oauth2/token", "application/x-www-form-urlencoded", form.Encode(), authorization)
}

func (ev *env) rawRequest(path, contentType, body, authorization string) (*http.Response, map[string]any) {
	ev.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ev.ts.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := ev.ts.Client().Do(req)
	if err != nil {
		ev.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = jsonDecode(resp, &out)
	return resp, out
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

// quietProfile is a test profile for what the CSC profiles do not use: no
// consent page, prompt and max_age, redirect_uri omission, extra token
// response members, a failing TokenResponse, and the error page before
// an error redirect (ProfileInfo.ErrorPage, as the OpenID profile).
type quietProfile struct{}

func (quietProfile) Info() oauth.ProfileInfo {
	return oauth.ProfileInfo{Name: "quiet", RedirectURIOptional: true, ErrorPage: true}
}

func (quietProfile) Match(scopes []string) bool { return slices.Contains(scopes, "quiet") }

func (quietProfile) Authorize(_ context.Context, r *oauth.AuthorizeRequest) (*oauth.Authorization, error) {
	if len(r.Scopes) != 1 {
		return nil, &oauth.Error{Code: oauth.CodeInvalidScope, Description: "quiet stands alone"}
	}
	a := &oauth.Authorization{
		Login:   oauth.LoginPolicy{SSO: true},
		Binding: oauth.Binding{Params: map[string]string{"mark": "bound"}},
	}
	switch r.Params.Get("prompt") {
	case "none":
		a.Login.Prompt = oauth.PromptNone
	case "login":
		a.Login.Prompt = oauth.PromptLogin
	}
	if v := r.Params.Get("max_age"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, &oauth.Error{Code: oauth.CodeInvalidRequest, Description: "bad max_age"}
		}
		a.Login.MaxAge, a.Login.HasMaxAge = time.Duration(n)*time.Second, true
	}
	return a, nil
}

func (quietProfile) CheckUser(_ context.Context, r *oauth.Request) error {
	if r.User.Username == "dave" {
		return &oauth.Error{Code: oauth.CodeAccessDenied, Description: "user email is unverified"}
	}
	return nil
}

func (quietProfile) Consent(context.Context, *oauth.Request) (*oauth.Consent, error) { return nil, nil }

func (quietProfile) Issue(*oauth.Request) (*oauth.Issuance, error) {
	return &oauth.Issuance{Kind: store.TokenAccess, TokenType: "Bearer", TTL: 10 * time.Minute}, nil
}

func (quietProfile) TokenResponse(_ context.Context, r *oauth.Request, tok *oauth.IssuedToken) (map[string]any, error) {
	switch r.Nonce {
	case "fail":
		return nil, errors.New("quiet: cannot sign the ID token")
	case "reserved":
		return map[string]any{"token_type": "x"}, nil
	}
	return map[string]any{
		"scope":     strings.Join(r.Scopes, " "),
		"token_len": len(tok.Value),
		"auth_time": r.AuthTime.Unix(),
		"nonce":     r.Nonce,
		"mark":      r.Binding.Params["mark"],
	}, nil
}

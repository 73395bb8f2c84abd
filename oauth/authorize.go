package oauth

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/store"
)

// maxNonce bounds the nonce stored with a request and its code.
const maxNonce = 512

// readParams returns the request's parameters (the query of a GET, the form
// body of a POST), each with one non-empty value, and the names given more
// than once. Empty parameters count as omitted (RFC 6749 §3.1).
func readParams(r *http.Request) (url.Values, []string, error) {
	var raw url.Values
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			return nil, nil, err
		}
		raw = r.PostForm
	} else {
		var err error
		if raw, err = url.ParseQuery(r.URL.RawQuery); err != nil {
			return nil, nil, err
		}
	}
	params := url.Values{}
	var dups []string
	for k, vs := range raw {
		if len(vs) > 1 {
			dups = append(dups, k)
			continue
		}
		if vs[0] != "" {
			params.Set(k, vs[0])
		}
	}
	slices.Sort(dups)
	return params, dups, nil
}

// splitScopes splits a scope parameter on spaces, dropping empty entries
// and repeats.
func splitScopes(s string) []string {
	var out []string
	for _, f := range strings.Split(s, " ") {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// authorize is GET and POST /oauth2/authorize: validate the request, then
// show the login page, or (after single sign-on) the consent page, or
// redirect straight back.
func (s *Server) authorize(c echo.Context) error {
	ctx := c.Request().Context()
	now := s.now()
	params, dups, err := readParams(c.Request())
	if err != nil {
		return NewPageError(http.StatusBadRequest, pages.NL, "errorpage.request")
	}
	lang := s.pages.PickLang(params.Get("ui_locales"), params.Get("lang"))

	// Until the redirect URI is validated, errors are pages.
	if slices.Contains(dups, "client_id") {
		return NewPageError(http.StatusBadRequest, lang, "errorpage.client")
	}
	if slices.Contains(dups, "redirect_uri") {
		return NewPageError(http.StatusBadRequest, lang, "errorpage.redirect")
	}
	clientID := params.Get("client_id")
	if clientID == "" {
		return NewPageError(http.StatusBadRequest, lang, "errorpage.client")
	}
	client, err := s.client(ctx, clientID)
	if err != nil {
		return err
	}
	if client == nil {
		s.log.Info("authorize: unknown client")
		return NewPageError(http.StatusBadRequest, lang, "errorpage.client")
	}
	scopes := splitScopes(params.Get("scope"))
	profile, info, scopeErr := s.match(scopes)
	redirectURI, sent := params.Get("redirect_uri"), params.Has("redirect_uri")
	switch {
	case sent && !slices.Contains(client.RedirectURIs, redirectURI):
		s.log.Info("authorize: redirect_uri not registered", "client_id", client.ID)
		return NewPageError(http.StatusBadRequest, lang, "errorpage.redirect")
	case !sent && profile != nil && info.RedirectURIOptional && len(client.RedirectURIs) == 1:
		redirectURI = client.RedirectURIs[0]
	case !sent:
		return NewPageError(http.StatusBadRequest, lang, "errorpage.redirect")
	}

	// From here on errors go back to the client.
	state := params.Get("state")
	t := target{redirectURI: redirectURI, status: http.StatusFound, lang: lang,
		page: info.ErrorPage && !slices.Contains(strings.Fields(params.Get("prompt")), "none")}
	if c.Request().Method == http.MethodPost {
		t.status = http.StatusSeeOther
	}
	if len(state) <= 255 {
		t.state = state
	}
	fail := func(code, format string, args ...any) error {
		return s.redirectError(t, Errorf(code, http.StatusBadRequest, format, args...))
	}
	switch rt := params.Get("response_type"); {
	case len(dups) > 0:
		return fail(CodeInvalidRequest, "Parameter %s is duplicated", dups[0])
	case rt == "":
		return fail(CodeInvalidRequest, "Missing parameter response_type")
	case rt != "code":
		return fail(CodeUnsupportedResponseType, "Only response_type code is supported")
	case state == "":
		return fail(CodeInvalidRequest, "Missing parameter state")
	case len(state) > 255:
		return fail(CodeInvalidRequest, "Parameter state is longer than 255 bytes")
	case scopeErr != nil:
		return s.redirectError(t, scopeErr)
	}
	challenge, method := params.Get("code_challenge"), params.Get("code_challenge_method")
	switch {
	case challenge == "" && method != "":
		return fail(CodeInvalidRequest, "code_challenge_method without code_challenge")
	case challenge == "" && client.RequirePKCE:
		return fail(CodeInvalidRequest, "This client must use PKCE (code_challenge with S256)")
	case challenge != "" && method != "S256":
		return fail(CodeInvalidRequest, "code_challenge_method must be S256")
	case challenge != "" && !validChallenge(challenge):
		return fail(CodeInvalidRequest, "Invalid parameter code_challenge")
	}
	nonce := params.Get("nonce")
	if len(nonce) > maxNonce {
		return fail(CodeInvalidRequest, "Parameter nonce is longer than %d bytes", maxNonce)
	}

	az, err := profile.Authorize(ctx, &AuthorizeRequest{
		Client: client, Scopes: scopes, RedirectURI: redirectURI, Params: params,
		Lang: lang, RequestedAt: now,
	})
	if err != nil {
		return s.redirectError(t, err)
	}
	if az == nil {
		return s.redirectError(t, fmt.Errorf("oauth: profile %s returned no authorization", info.Name))
	}
	granted := az.Scopes
	if granted == nil {
		granted = scopes
	}
	for _, sc := range granted {
		if !slices.Contains(client.Scopes, sc) {
			return fail(CodeInvalidScope, "Scope %s is not allowed for this client", sc)
		}
	}

	f := &flow{
		client:  client,
		profile: profile,
		target:  t,
		req: &store.AuthRequest{
			Grant: store.Grant{
				ClientID: client.ID, RedirectURI: redirectURI, RedirectURISent: sent,
				Scopes: granted, Profile: info.Name, Params: az.Binding.Params,
				Nonce: nonce, Lang: lang, SSO: az.Login.SSO, Prompt: promptString(az.Login.Prompt),
				MaxAge: az.Login.MaxAge, HasMaxAge: az.Login.HasMaxAge, RequestedAt: now,
			},
			State:     state,
			Stage:     store.StageLogin,
			ExpiresAt: now.Add(s.requestLifetime()),
		},
	}
	if err := storeDetails(&f.req.Grant, info.DetailType, az.Binding.Details); err != nil {
		return s.redirectError(t, err)
	}
	if challenge != "" {
		f.req.CodeChallenge, f.req.CodeChallengeMethod = challenge, "S256"
	}
	if f.handle, err = NewSecret(); err != nil {
		return s.redirectError(t, err)
	}
	if f.csrf, err = NewSecret(); err != nil {
		return s.redirectError(t, err)
	}
	f.req.Hash, f.req.CSRFHash = store.Fingerprint(f.handle), store.Fingerprint(f.csrf)
	if err := s.bindBrowser(c, f, now); err != nil {
		return s.redirectError(t, err)
	}
	s.log.Info("authorization request", "client_id", client.ID, "profile", f.req.Profile)

	// Single sign-on, when the profile allows it and the session is fresh
	// enough.
	policy := az.Login
	if policy.SSO && policy.Prompt != PromptLogin {
		user, authTime, err := s.sessionUser(c, now)
		if err != nil {
			return s.redirectError(t, err)
		}
		if user != nil && !(policy.HasMaxAge && (policy.MaxAge == 0 || now.Sub(authTime) > policy.MaxAge)) {
			f.req.Username, f.req.AuthTime = user.Username, authTime
			s.log.Info("single sign-on", "client_id", client.ID, "username", user.Username)
			return s.proceed(c, f, user, nil)
		}
	}
	if policy.Prompt == PromptNone {
		return fail(CodeLoginRequired, "The user is not logged in")
	}
	if err := s.store.Update(ctx, func(tx Tx) error { return tx.CreateAuthRequest(f.req) }); err != nil {
		return s.redirectError(t, err)
	}
	sendBinding(c, f)
	return s.renderLogin(c, f, "", "")
}

// requestLifetime is how long a pending request is kept: past every
// timeout, so a late answer still gets its redirect rather than the
// unknown-request page.
func (s *Server) requestLifetime() time.Duration {
	return max(s.cfg.ProcessTimeout, s.cfg.LoginTimeout+s.cfg.ConsentTimeout) + time.Hour
}

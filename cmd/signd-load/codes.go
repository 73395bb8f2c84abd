package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/signd/signd/oauth/oauthtest"
)

// codesOpts mints authorization codes through an OpenID provider's
// authorization endpoint (OIDC Core §3.1.2), as a browser would.
type codesOpts struct {
	url, client, redirectURI, user, passwordFile, out string
	count, concurrency                                int
	duration                                          time.Duration
}

// codeFile is what the codes mode writes and the token mode reads.
type codeFile struct {
	Issuer        string     `json:"issuer"`
	TokenEndpoint string     `json:"token_endpoint"`
	ClientID      string     `json:"client_id"`
	RedirectURI   string     `json:"redirect_uri"`
	Codes         []codeItem `json:"codes"`
}

// codeItem is one authorization code and the PKCE code_verifier of its
// request (RFC 7636 §4.1).
type codeItem struct {
	Code     string `json:"code"`
	Verifier string `json:"verifier"`
}

// Bounds of the codes and token modes.
const (
	maxCodes     = 100000
	maxMintConc  = 64
	mintSteps    = 12 // redirects and forms of one authorization, at most
	mintReqLimit = 30 * time.Second
)

func (o *codesOpts) check() (*url.URL, error) {
	switch {
	case o.url == "" || o.client == "" || o.redirectURI == "" || o.user == "" || o.passwordFile == "" || o.out == "":
		return nil, errors.New("codes needs --url, --client, --redirect-uri, --user, --password-file and --out")
	case o.count < 1 || o.count > maxCodes:
		return nil, fmt.Errorf("--count must be 1 to %d", maxCodes)
	case o.concurrency < 1 || o.concurrency > maxMintConc:
		return nil, fmt.Errorf("--concurrency must be 1 to %d", maxMintConc)
	case o.duration <= 0 || o.duration > maxDuration:
		return nil, fmt.Errorf("--duration must be positive and at most %v", maxDuration)
	}
	if r, err := url.Parse(o.redirectURI); err != nil || !r.IsAbs() || r.Fragment != "" {
		return nil, fmt.Errorf("--redirect-uri %q: want an absolute URI without fragment", o.redirectURI)
	}
	return loopback(o.url)
}

// mintCodes runs o.count authorization code flows with PKCE S256 (scope
// openid, response_type code) against the issuer at o.url: discovery, the
// authorization endpoint, then whatever login and consent forms it shows,
// filled in and submitted, until it redirects to o.redirectURI. Each worker
// is one browser with its own cookie jar: it logs in once and its later
// authorizations ride on the login session. Every request stays on
// loopback; the redirect to o.redirectURI is read, never followed.
func mintCodes(ctx context.Context, o codesOpts, out io.Writer) error {
	base, err := o.check()
	if err != nil {
		return err
	}
	password, err := readSecretLine(o.passwordFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: o.concurrency, DisableCompression: true}
	defer transport.CloseIdleConnections()
	meta, err := discover(ctx, transport, base)
	if err != nil {
		return err
	}
	authz, err := loopback(meta.AuthorizationEndpoint)
	if err != nil {
		return fmt.Errorf("discovery: authorization_endpoint: %w", err)
	}
	if _, err := loopback(meta.TokenEndpoint); err != nil {
		return fmt.Errorf("discovery: token_endpoint: %w", err)
	}
	m := &minter{authz: authz, client: o.client, redirectURI: o.redirectURI, user: o.user, password: password}

	start := time.Now()
	var (
		mu       sync.Mutex
		codes    = make([]codeItem, 0, o.count)
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan struct{}, o.count)
	for range o.count {
		next <- struct{}{}
	}
	close(next)
	for range o.concurrency {
		wg.Go(func() {
			b := oauthtest.NewBrowser(transport)
			b.HTTP.Timeout = mintReqLimit
			for range next {
				it, err := m.authorize(ctx, b)
				mu.Lock()
				if err != nil {
					if firstErr == nil && ctx.Err() == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel() // one failed flow stops the run: the set-up is wrong
					return
				}
				codes = append(codes, it)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if len(codes) == 0 {
		return fmt.Errorf("no code minted within %v", o.duration)
	}
	data, err := json.Marshal(codeFile{
		Issuer: meta.Issuer, TokenEndpoint: meta.TokenEndpoint, ClientID: o.client, RedirectURI: o.redirectURI, Codes: codes,
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.out, data, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "minted=%d of=%d seconds=%.2f issuer=%s file=%s\n", len(codes), o.count, time.Since(start).Seconds(), meta.Issuer, o.out)
	return nil
}

// providerMeta is the part of the discovery document (OpenID Connect
// Discovery 1.0 §3) the benchmark needs.
type providerMeta struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
}

func discover(ctx context.Context, rt http.RoundTripper, base *url.URL) (*providerMeta, error) {
	u := base.JoinPath(".well-known", "openid-configuration")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	res, err := (&http.Client{Transport: rt, Timeout: mintReqLimit}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("discovery: %s: %s", u, res.Status)
	}
	var m providerMeta
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("discovery: %s: %w", u, err)
	}
	if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
		return nil, fmt.Errorf("discovery: %s lacks authorization_endpoint or token_endpoint", u)
	}
	return &m, nil
}

// minter drives one authorization code flow per call.
type minter struct {
	authz                               *url.URL
	client, redirectURI, user, password string
}

// authorize sends one authorization request and walks its pages: a form
// with a username (signd) or login (node-oidc-provider's built-in
// interactions) and a password field is filled with the user's
// credentials; a form with a decision=approve button is approved; any
// other form is submitted as it is (a consent page without choices).
func (m *minter) authorize(ctx context.Context, b *oauthtest.Browser) (codeItem, error) {
	verifier := base64.RawURLEncoding.EncodeToString(random32())
	challenge := sha256.Sum256([]byte(verifier))
	state, nonce := randomString(), randomString()
	u := *m.authz
	q := u.Query()
	for k, v := range map[string]string{
		"response_type": "code", "client_id": m.client, "redirect_uri": m.redirectURI, "scope": "openid",
		"state": state, "nonce": nonce, "code_challenge": base64.RawURLEncoding.EncodeToString(challenge[:]),
		"code_challenge_method": "S256",
	} {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	s, err := get(ctx, b, u.String())
	for range mintSteps {
		if err != nil {
			return codeItem{}, err
		}
		switch {
		case s.Redirected() && m.isRedirectURI(s.Location):
			q := s.Query()
			if e := q.Get("error"); e != "" {
				return codeItem{}, fmt.Errorf("authorization: %s: %s", e, q.Get("error_description"))
			}
			if q.Get("state") != state || q.Get("code") == "" {
				return codeItem{}, errors.New("authorization: redirect without the code or with another state")
			}
			return codeItem{Code: q.Get("code"), Verifier: verifier}, nil
		case s.Redirected():
			if _, err := loopback(s.Location.String()); err != nil {
				return codeItem{}, fmt.Errorf("authorization: redirect: %w", err)
			}
			s, err = get(ctx, b, s.Location.String())
		case s.Form != nil:
			if _, err := loopback(s.Form.Action.String()); err != nil {
				return codeItem{}, fmt.Errorf("authorization: form action: %w", err)
			}
			s, err = b.Submit(s.Form, m.fill(s.Form), approveButton(s.Form))
		default:
			return codeItem{}, fmt.Errorf("authorization: %s answered %d: %.200s", s.URL.Path, s.Status, oauthtest.Text(s.Body))
		}
	}
	if err != nil {
		return codeItem{}, err
	}
	return codeItem{}, fmt.Errorf("authorization: no redirect to %s after %d steps", m.redirectURI, mintSteps)
}

func get(ctx context.Context, b *oauthtest.Browser, u string) (*oauthtest.Step, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return b.Do(req)
}

// isRedirectURI reports whether u is the registered redirect URI with
// authorization response parameters (RFC 6749 §4.1.2).
func (m *minter) isRedirectURI(u *url.URL) bool {
	v := *u
	v.RawQuery = ""
	return v.String() == m.redirectURI
}

// fill returns the credential fields of a login form (none for others).
func (m *minter) fill(f *oauthtest.Form) map[string]string {
	set := map[string]string{}
	if !f.Has("password") {
		return set
	}
	set["password"] = m.password
	for _, name := range []string{"username", "login"} {
		if f.Has(name) {
			set[name] = m.user
		}
	}
	return set
}

func approveButton(f *oauthtest.Form) string {
	for _, b := range f.Buttons {
		if b.Name == "decision" && b.Value == "approve" {
			return "approve"
		}
	}
	return ""
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// readSecretLine reads a password or client secret: the file's first line.
func readSecretLine(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	if line = strings.TrimRight(line, "\r"); line == "" {
		return "", fmt.Errorf("%s: empty", path)
	}
	return line, nil
}

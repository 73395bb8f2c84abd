package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
)

// TestOAuthThroughDaemon runs `signd serve`, sets up a user (password and
// signing PIN), a client and a credential whose key lives in the SoftHSM2
// token — all through the CLI — and completes a service flow and a
// credential flow over real HTTP with golang.org/x/oauth2 as the client.
// The daemon's log must not contain any secret of the flows.
func TestOAuthThroughDaemon(t *testing.T) {
	e := newEnv(t, "")
	addr, logs := e.daemon()
	base := "http://" + addr
	const password, pin = "oauth e2e password", "864213"
	secret := strings.Repeat("k", 43)
	pinFile := filepath.Join(e.dir, "user-pin")
	if err := os.WriteFile(pinFile, []byte(pin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(password+"\n", "user", "add", "alice", "--password-file", "-", "--pin-file", pinFile)
	e.must(secret+"\n", "client", "add", "app", "--name", "E2E App", "--redirect-uri", "https://app.example/cb", "--secret-file", "-")
	csr := e.must("", "credential", "create", "--user", "alice", "--subject", "CN=Alice,O=Example", "--csr-out", "-")
	lines := strings.Split(strings.TrimSpace(csr), "\n")
	cred := lines[len(lines)-1]
	chain := filepath.Join(e.dir, "chain.pem")
	if err := os.WriteFile(chain, []byte(newTestCA(t, "OAuth E2E CA").issue(t, csr)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("", "credential", "import-cert", cred, "--chain", chain)

	conf := &oauth2.Config{
		ClientID: "app", ClientSecret: secret, RedirectURL: "https://app.example/cb",
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth2/authorize", TokenURL: base + "/oauth2/token"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := oauthtest.NewBrowser(nil)
	flow := func(scope string, set map[string]string, opts ...oauth2.AuthCodeOption) (*oauth2.Token, []string) {
		t.Helper()
		c := *conf
		c.Scopes = []string{scope}
		verifier := oauth2.GenerateVerifier()
		s, err := b.Get(c.AuthCodeURL("e2e-"+scope, append(opts, oauth2.S256ChallengeOption(verifier))...))
		if err != nil {
			t.Fatal(err)
		}
		var secrets []string
		for s.Form != nil {
			secrets = append(secrets, s.Form.Fields.Get("request"), s.Form.Fields.Get("csrf_token"))
			fill := map[string]string{}
			for k, v := range set {
				if s.Form.Has(k) {
					fill[k] = v
				}
			}
			if s, err = b.Submit(s.Form, fill, "approve"); err != nil {
				t.Fatal(err)
			}
		}
		if s.Status != http.StatusSeeOther || s.Query().Get("code") == "" || s.Query().Get("state") != "e2e-"+scope {
			t.Fatalf("%s flow ended with %d %v %s", scope, s.Status, s.Location, oauthtest.Text(s.Body))
		}
		code := s.Query().Get("code")
		tok, err := c.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("%s exchange: %v", scope, err)
		}
		return tok, append(secrets, code, tok.AccessToken)
	}
	login := map[string]string{"username": "alice", "password": password, "pin": pin}
	svc, s1 := flow("service", login)
	if svc.Type() != "Bearer" || svc.AccessToken == "" {
		t.Errorf("service token %+v", svc)
	}
	digest := make([]byte, 32)
	digest[0] = 7
	sad, s2 := flow("credential", login,
		oneSignature(cred, digest, oauth2.SetAuthURLParam("lang", "en"))...)
	if sad.Type() != "SAD" || sad.AccessToken == "" {
		t.Errorf("credential token %+v", sad)
	}
	// Revocation over HTTP.
	req, _ := http.NewRequest(http.MethodPost, base+"/oauth2/revoke", strings.NewReader(url.Values{"token": {sad.AccessToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("app", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("revoke: %d", resp.StatusCode)
	}

	time.Sleep(50 * time.Millisecond)
	l := logs.String()
	if !strings.Contains(l, "token issued") {
		t.Fatalf("the daemon log lacks the flows:\n%s", l)
	}
	for _, s := range append(append([]string{password, pin, secret}, s1...), s2...) {
		if s != "" && strings.Contains(l, s) {
			t.Errorf("the daemon log contains a secret (%d bytes)", len(s))
		}
	}
}

package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest"
	"github.com/signd/signd/oauth/oauthtest"
)

// TestIDTokenHSMOutageThroughDaemonRouter: the OpenID Connect token
// endpoint, wired as serve wires it, over the real SoftHSM2 token whose
// PKCS#11 module vanishes (hsmtest.Faults). While the token cannot sign the
// ID token the answer is 503 temporarily_unavailable with Retry-After
// (never 500); once the token knows it is gone, a code is refused before it
// is redeemed, so the same code works after the token is back. The
// protocol side of this, on the software token, is oidc's
// TestTokenEndpointHSMOutage.
func TestIDTokenHSMOutageThroughDaemonRouter(t *testing.T) {
	e := newEnv(t, "")
	secret := addAliceAndRP(e, "openid")

	var faults *hsmtest.Faults
	d := serveRouter(t, e, func(_ *config.Config, logger *slog.Logger) (*hsm.Token, error) {
		return hsm.Open(hsm.Config{
			Module: token.Module, TokenLabel: token.Label, PIN: token.PIN, Logger: logger,
			Wrap: func(c hsm.Ctx) hsm.Ctx { faults = hsmtest.Wrap(c); return faults },
		})
	})
	ts, cfg, tok, logs := d.ts, d.cfg, d.tok, d.logs

	// code runs one authorization (login, consent) in a fresh browser.
	code := func(state string) string {
		t.Helper()
		b := oauthtest.NewBrowser(ts.Client().Transport)
		q := url.Values{"response_type": {"code"}, "client_id": {"rp"}, "redirect_uri": {"https://rp.example.com/cb"},
			"scope": {"openid"}, "state": {state}, "nonce": {"n-" + state}}
		s, err := b.Get(cfg.Server.BaseURL + "/oauth2/authorize?" + q.Encode())
		if err != nil || s.Form == nil {
			t.Fatalf("authorize: %v %+v", err, s)
		}
		if s, err = b.Submit(s.Form, map[string]string{"username": "alice", "password": "a password!"}, "approve"); err != nil {
			t.Fatalf("login: %v", err)
		}
		if s.Form != nil { // a consent page
			if s, err = b.Submit(s.Form, nil, "approve"); err != nil {
				t.Fatalf("consent: %v", err)
			}
		}
		if !s.Redirected() || s.Query().Get("code") == "" {
			t.Fatalf("no code: %d %v %.300s", s.Status, s.Location, s.Body)
		}
		return s.Query().Get("code")
	}
	type answer struct {
		status int
		header http.Header
		body   map[string]any
	}
	redeem := func(code string) answer {
		t.Helper()
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"https://rp.example.com/cb"}}
		req, err := http.NewRequest(http.MethodPost, cfg.Server.BaseURL+"/oauth2/token", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("rp", secret)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		a := answer{status: res.StatusCode, header: res.Header}
		if err := json.NewDecoder(res.Body).Decode(&a.body); err != nil {
			t.Fatalf("token answer %d is not JSON: %v", res.StatusCode, err)
		}
		return a
	}
	want503 := func(what string, a answer) {
		t.Helper()
		if a.status != http.StatusServiceUnavailable || a.body["error"] != "temporarily_unavailable" ||
			a.body["error_description"] != "The ID token signer is temporarily unavailable, try again later" {
			t.Errorf("%s: %d %v", what, a.status, a.body)
		}
		if a.header.Get("Retry-After") != "5" || a.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", what, a.header)
		}
	}

	if a := redeem(code("before")); a.status != http.StatusOK || a.body["id_token"] == nil {
		t.Fatalf("before the outage: %d %v", a.status, a.body)
	}
	faults.SetGone(true)
	// The first redemption finds the outage while signing.
	want503("redeem as the HSM fails", redeem(code("fails")))
	if tok.Available() {
		t.Fatal("the ID-token signer's failure did not mark the token unavailable")
	}
	// From now on codes are refused before they are redeemed.
	kept := code("kept")
	signs := faults.Calls("Sign")
	want503("redeem during the outage", redeem(kept))
	if n := faults.Calls("Sign") - signs; n != 0 {
		t.Errorf("%d C_Sign calls while the token was known to be gone", n)
	}

	faults.SetGone(false)
	deadline := time.Now().Add(5 * time.Second)
	for !tok.Available() {
		if time.Now().After(deadline) {
			t.Fatal("token not back within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if a := redeem(kept); a.status != http.StatusOK || a.body["id_token"] == nil {
		t.Fatalf("the code presented during the outage, after it: %d %v", a.status, a.body)
	}
	if m := logs.String(); strings.Contains(m, secret) || strings.Contains(m, kept) {
		t.Errorf("a secret or code reached the log (%d bytes of logs)", len(m))
	}
}

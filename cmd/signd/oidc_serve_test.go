package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/signd/signd/cmd/signd/httpserver"
	"github.com/signd/signd/cmd/signd/storeopen"
	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth/oauthtest"
)

// The daemon's own router (middleware, global error handler) with every
// service wired as serve wires it, on a listener whose URL is
// server.base_url: a go-oidc relying party logs alice in through the HTML
// forms and reads /userinfo.
func TestOIDCThroughDaemonRouter(t *testing.T) {
	e := newEnv(t, "")
	secret := addAliceAndRP(e, "openid", "email")

	d := serveRouter(t, e, func(cfg *config.Config, logger *slog.Logger) (*hsm.Token, error) { return openToken(cfg, logger, nil) })
	ts, cfg, logs := d.ts, d.cfg, d.logs

	ctx := gooidc.ClientContext(context.Background(), ts.Client())
	provider, err := gooidc.NewProvider(ctx, cfg.Server.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	conf := &oauth2.Config{ClientID: "rp", ClientSecret: secret, RedirectURL: "https://rp.example.com/cb",
		Endpoint: provider.Endpoint(), Scopes: []string{"openid", "email"}}
	b := oauthtest.NewBrowser(ts.Client().Transport)
	s, err := b.Get(conf.AuthCodeURL("st-1", gooidc.Nonce("n-1")))
	if err != nil || s.Form == nil {
		t.Fatalf("authorize: %v %+v", err, s)
	}
	if s, err = b.Submit(s.Form, map[string]string{"username": "alice", "password": "a password!"}, "approve"); err != nil || s.Form == nil {
		t.Fatalf("login: %v %.300s", err, s.Body)
	}
	if s, err = b.Submit(s.Form, nil, "approve"); err != nil || !s.Redirected() {
		t.Fatalf("consent: %v %+v", err, s)
	}
	token, err := conf.Exchange(ctx, s.Query().Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	idt, err := provider.Verifier(&gooidc.Config{ClientID: "rp"}).Verify(ctx, token.Extra("id_token").(string))
	if err != nil {
		t.Fatal(err)
	}
	if idt.Nonce != "n-1" || idt.VerifyAccessToken(token.AccessToken) != nil {
		t.Errorf("nonce %q, at_hash %v", idt.Nonce, idt.VerifyAccessToken(token.AccessToken))
	}
	ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(token))
	if err != nil {
		t.Fatal(err)
	}
	if ui.Subject != idt.Subject || ui.Email != "alice@example.com" || !ui.EmailVerified {
		t.Errorf("userinfo %+v, ID token sub %s", ui, idt.Subject)
	}
	// The daemon's headers reach the OIDC answers, and /userinfo without
	// a token is the bare RFC 6750 challenge.
	res, err := ts.Client().Get(cfg.Server.BaseURL + "/userinfo")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Bearer realm="`+cfg.Server.BaseURL+`"` ||
		res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("userinfo without token: %d %v", res.StatusCode, res.Header)
	}
	if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), token.AccessToken) {
		t.Error("a secret or token reached the log")
	}
}

// routedDaemon is the daemon's own router (middleware, global error
// handler) with every service wired as serve wires it, served on a
// listener whose URL is server.base_url.
type routedDaemon struct {
	ts   *httptest.Server
	cfg  *config.Config
	tok  *hsm.Token
	logs *syncBuffer
}

// serveRouter starts a routedDaemon on e's configuration and store, with
// the token open returns; everything is closed with t.Cleanup, the server
// first.
func serveRouter(t *testing.T, e *env, open func(cfg *config.Config, logger *slog.Logger) (*hsm.Token, error)) *routedDaemon {
	t.Helper()
	cfg, err := config.Load(config.Options{File: e.cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.BaseURL = "http://" + ln.Addr().String()
	db, err := storeopen.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	tok, err := open(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tok.Close() })
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, logs)
	a.argon2 = &testArgon2
	hasher, err := a.hasher()
	if err != nil {
		t.Fatal(err)
	}
	srv := &httpserver.Server{Store: db, Token: tok, Logger: logger, BodyLimit: cfg.Server.BodyLimitBytes}
	router := srv.Echo()
	svc := &services{cfg: cfg, store: db, token: tok, hasher: hasher, logger: logger, now: a.clock,
		keys: newKeyRing(cfg, db, tok, a.clock, logger)}
	t.Cleanup(func() {
		for _, stop := range svc.onShutdown {
			stop()
		}
	})
	if err := svc.mount(router); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(router)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return &routedDaemon{ts: ts, cfg: cfg, tok: tok, logs: logs}
}

// addAliceAndRP adds alice (password "a password!", a verified e-mail
// address) and the confidential client rp (redirect URI
// https://rp.example.com/cb) allowed scopes; it returns rp's secret.
func addAliceAndRP(e *env, scopes ...string) string {
	e.t.Helper()
	secret := strings.Repeat("s", 40)
	e.must("a password!\n", "user", "add", "alice", "--password-file", "-", "--email", "alice@example.com", "--email-verified")
	args := []string{"client", "add", "rp", "--redirect-uri", "https://rp.example.com/cb", "--secret-file", "-"}
	for _, s := range scopes {
		args = append(args, "--scope", s)
	}
	e.must(secret+"\n", args...)
	return secret
}

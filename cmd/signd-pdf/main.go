package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/signd/signd/cmd/signd-pdf/remote"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "signd-pdf:", err)
		os.Exit(1)
	}
}

type options struct {
	url, clientID, secretFile, redirect, credential, tokenFile string
	in, out, name, reason, location                            string
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("signd-pdf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "base URL of signd (server.base_url)")
	fs.StringVar(&o.clientID, "client-id", "", "OAuth client ID")
	fs.StringVar(&o.secretFile, "client-secret-file", "", "file holding the client secret")
	fs.StringVar(&o.redirect, "redirect-uri", "http://127.0.0.1:8765/callback", "loopback redirect URI registered for the client")
	fs.StringVar(&o.credential, "credential", "", "credential ID to sign with")
	fs.StringVar(&o.tokenFile, "access-token-file", "", "file holding a service-scope access token (default: authorize in the browser)")
	fs.StringVar(&o.in, "in", "", "PDF to sign")
	fs.StringVar(&o.out, "out", "", "where to write the signed PDF")
	fs.StringVar(&o.name, "name", "", "signer name in the signature dictionary")
	fs.StringVar(&o.reason, "reason", "", "reason for signing")
	fs.StringVar(&o.location, "location", "", "location of signing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for flagName, v := range map[string]string{"url": o.url, "client-id": o.clientID, "credential": o.credential, "in": o.in, "out": o.out} {
		if v == "" {
			return fmt.Errorf("--%s is required", flagName)
		}
	}
	secret := ""
	if o.secretFile != "" {
		b, err := os.ReadFile(o.secretFile)
		if err != nil {
			return err
		}
		secret = strings.TrimSpace(string(b))
	}
	base := strings.TrimSuffix(o.url, "/")
	conf := oauth2.Config{
		ClientID: o.clientID, ClientSecret: secret, RedirectURL: o.redirect,
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth2/authorize", TokenURL: base + "/oauth2/token", AuthStyle: oauth2.AuthStyleInHeader},
	}
	flow := browserFlow{conf: conf, out: stderr}

	c := &remote.Client{BaseURL: base, CredentialID: o.credential}
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return err
		}
		c.AccessToken = strings.TrimSpace(string(b))
	} else {
		tok, err := flow.run(ctx, "service")
		if err != nil {
			return fmt.Errorf("service authorization: %w", err)
		}
		c.AccessToken = tok.AccessToken
	}
	c.Authorize = func(ctx context.Context, digest []byte) (string, error) {
		tok, err := flow.run(ctx, "credential",
			oauth2.SetAuthURLParam("credentialID", o.credential),
			oauth2.SetAuthURLParam("numSignatures", "1"),
			oauth2.SetAuthURLParam("hash", base64.RawURLEncoding.EncodeToString(digest)))
		if err != nil {
			return "", err
		}
		return tok.AccessToken, nil
	}

	in, err := os.Open(o.in)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := o.out + ".partial"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = remote.Sign(ctx, c, in, st.Size(), out, remote.Document{Name: o.name, Reason: o.reason, Location: o.location})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "signed %s -> %s\n", o.in, o.out)
	return nil
}

// browserFlow runs the authorization code flow with PKCE: it prints the
// authorization URL for the user to open and takes the code from the
// redirect to the loopback redirect URI (RFC 8252 §7.3).
type browserFlow struct {
	conf oauth2.Config
	out  io.Writer
}

func (f browserFlow) run(ctx context.Context, scope string, params ...oauth2.AuthCodeOption) (*oauth2.Token, error) {
	ru, err := url.Parse(f.conf.RedirectURL)
	if err != nil || ru.Scheme != "http" || (ru.Hostname() != "127.0.0.1" && ru.Hostname() != "[::1]" && ru.Hostname() != "::1") {
		return nil, errors.New("--redirect-uri must be http://127.0.0.1:PORT/PATH (a loopback redirect, RFC 8252 §7.3)")
	}
	ln, err := net.Listen("tcp", ru.Host)
	if err != nil {
		return nil, fmt.Errorf("listen for the redirect: %w", err)
	}
	state := oauth2.GenerateVerifier() // 32 random bytes, base64url
	verifier := oauth2.GenerateVerifier()
	conf := f.conf
	conf.Scopes = []string{scope}
	codes := make(chan url.Values, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ru.Path {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if q.Get("state") != state {
			http.Error(w, "state mismatch", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "signd-pdf: authorization received, you can close this window.")
		select {
		case codes <- q:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	authURL := conf.AuthCodeURL(state, append(params, oauth2.S256ChallengeOption(verifier))...)
	fmt.Fprintf(f.out, "Open this URL in your browser to authorize (%s):\n\n  %s\n\n", scope, authURL)
	var q url.Values
	select {
	case q = <-codes:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Minute):
		return nil, errors.New("no authorization within 10 minutes")
	}
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s: %s", e, q.Get("error_description"))
	}
	return conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
}

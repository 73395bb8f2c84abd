package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"time"
)

// tokenOpts exchanges minted codes at the token endpoint.
type tokenOpts struct {
	in, secretFile, auth string
	// alg, when set, is the JWS alg every ID token must carry: its
	// protected header must start with {"alg":"<alg>", as signd's and
	// node-oidc-provider's do.
	alg                 string
	concurrency, warmup int
	duration            time.Duration
}

// jwsAlgRE is a JWS alg value as --alg takes it.
var jwsAlgRE = regexp.MustCompile(`^[A-Za-z0-9]{1,16}$`)

// idTokenWant is what a counted response's body must contain: the
// id_token member, and with alg the start of its protected header.
func idTokenWant(alg string) []byte {
	want := `"id_token":"`
	if alg != "" {
		// {"alg":"ES256", is 15 bytes: a whole number of base64 groups
		// for the 5-character names; longer or shorter names end
		// mid-group, so only the complete groups are compared.
		hdr := `{"alg":"` + alg + `",`
		enc := base64.RawURLEncoding.EncodeToString([]byte(hdr))
		want += enc[:len(hdr)/3*4]
	}
	return []byte(want)
}

func (o *tokenOpts) check() error {
	switch {
	case o.in == "" || o.secretFile == "":
		return fmt.Errorf("token needs --in and --secret-file")
	case o.auth != "basic" && o.auth != "post":
		return fmt.Errorf("--auth %q: want basic (client_secret_basic) or post (client_secret_post)", o.auth)
	case o.concurrency < 1 || o.concurrency > 256 || o.warmup < 0:
		return fmt.Errorf("--concurrency must be 1 to 256 and --warmup not negative")
	case o.duration <= 0 || o.duration > maxDuration:
		return fmt.Errorf("--duration must be positive and at most %v", maxDuration)
	case o.alg != "" && !jwsAlgRE.MatchString(o.alg):
		return fmt.Errorf("--alg %.20q: want a JWS algorithm name such as RS256 or ES256", o.alg)
	}
	return nil
}

// tokenBench redeems each code of o.in once at its token endpoint
// (RFC 6749 §4.1.3 with the PKCE code_verifier, RFC 7636 §4.5), from
// o.concurrency keep-alive connections, until the codes or o.duration run
// out. A response counts when it is a 200 with an id_token (of o.alg, when
// set).
func tokenBench(ctx context.Context, o tokenOpts, out io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	f, err := readCodeFile(o.in)
	if err != nil {
		return err
	}
	u, err := loopback(f.TokenEndpoint)
	if err != nil {
		return fmt.Errorf("%s: token_endpoint: %w", o.in, err)
	}
	if len(f.Codes) <= o.warmup {
		return fmt.Errorf("%s has %d codes, not more than the warm-up", o.in, len(f.Codes))
	}
	secret, err := readSecretLine(o.secretFile)
	if err != nil {
		return err
	}
	// Requests are built before the clock starts.
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(f.ClientID)+":"+url.QueryEscape(secret)))
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	reqs := make([][]byte, len(f.Codes))
	for i, c := range f.Codes {
		form := url.Values{
			"grant_type": {"authorization_code"}, "code": {c.Code}, "redirect_uri": {f.RedirectURI}, "code_verifier": {c.Verifier},
		}
		a := auth
		if o.auth == "post" {
			form.Set("client_id", f.ClientID)
			form.Set("client_secret", secret)
			a = ""
		}
		reqs[i] = rawRequest(path, u.Host, a, "application/x-www-form-urlencoded", []byte(form.Encode()))
	}
	return drive(ctx, driveOpts{
		mode: "token", addr: u.Host, want: idTokenWant(o.alg), requests: reqs,
		concurrency: o.concurrency, duration: o.duration, warmup: o.warmup,
	}, out)
}

func readCodeFile(path string) (*codeFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f codeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.TokenEndpoint == "" || f.ClientID == "" || f.RedirectURI == "" {
		return nil, fmt.Errorf("%s: not a file written by signd-load codes", path)
	}
	return &f, nil
}

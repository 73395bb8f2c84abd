package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoopbackOnly(t *testing.T) {
	for url, ok := range map[string]bool{
		"http://127.0.0.1:8443": true, "http://[::1]:80": true, "http://localhost:1": true, "https://127.0.0.2:9": true,
		"http://10.0.0.1:8443": false, "http://example.com": false, "ftp://127.0.0.1": false, "127.0.0.1:80": false,
	} {
		if _, err := loopback(url); (err == nil) != ok {
			t.Errorf("loopback(%q) = %v, want ok %v", url, err, ok)
		}
	}
}

// TestRawConn runs the lean client against net/http answering with a
// Content-Length, chunked, an error, and closing the connection.
func TestRawConn(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/csc/v1/signatures/signHash" || string(body) != `{"n":1}` ||
			r.Header.Get("Authorization") != "Bearer b" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %s %s %q %v", r.Method, r.URL, body, r.Header)
		}
		switch calls {
		case 1: // small body: net/http adds Content-Length
			w.Write([]byte(`{"signatures":["AA=="]}`))
		case 2: // explicit flush: chunked
			w.Write([]byte(`{"signatures":`))
			w.(http.Flusher).Flush()
			w.Write([]byte(`["AA=="]}`))
		case 3:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_request"}`))
		default:
			w.Header().Set("Connection", "close")
			w.Write([]byte(`{"signatures":["AA=="]}`))
		}
	}))
	defer srv.Close()
	c := &rawConn{addr: strings.TrimPrefix(srv.URL, "http://"), want: []byte(`"signatures":["`)}
	req := rawRequest("/csc/v1/signatures/signHash", c.addr, "Bearer b", "application/json", []byte(`{"n":1}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, wantErr := range []bool{false, false, true, false, false} {
		err := c.do(ctx, req)
		if (err != nil) != wantErr {
			t.Errorf("request %d: %v, want error %v", i+1, err, wantErr)
		}
	}
}

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if quantile(d, 0.5) != 50 || quantile(d, 0.99) != 99 || quantile(d, 1) != 100 || quantile(nil, 0.5) != 0 {
		t.Errorf("quantiles %v %v %v", quantile(d, 0.5), quantile(d, 0.99), quantile(d, 1))
	}
}

// TestCodesTokenArgs checks the arguments of the codes and token modes;
// each case fails before any request is sent.
func TestCodesTokenArgs(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	writeFile(t, pw, "a password\n")
	codes := func(name, endpoint string, n int) string {
		f := codeFile{Issuer: "http://127.0.0.1:1", TokenEndpoint: endpoint, ClientID: "rp", RedirectURI: "https://rp.invalid/cb"}
		for i := range n {
			f.Codes = append(f.Codes, codeItem{Code: fmt.Sprint("c", i), Verifier: "v"})
		}
		data, _ := json.Marshal(f)
		p := filepath.Join(dir, name)
		writeFile(t, p, string(data))
		return p
	}
	good := codes("good.json", "http://127.0.0.1:1/token", 100)
	mint := []string{"codes", "--client", "rp", "--redirect-uri", "https://rp.invalid/cb", "--user", "u", "--password-file", pw, "--out", filepath.Join(dir, "out.json")}
	exchange := []string{"token", "--secret-file", pw}
	for _, tc := range []struct {
		name string
		args []string
		want string // in the error
	}{
		{"codes without url", mint, "codes needs --url"},
		{"codes malformed url", append(mint, "--url", "127.0.0.1:8443"), "want http(s)://127.0.0.1:PORT"},
		{"codes bad scheme", append(mint, "--url", "ftp://127.0.0.1:21"), "want http(s)://127.0.0.1:PORT"},
		{"codes not loopback", append(mint, "--url", "http://192.0.2.1:8443"), "only loopback"},
		{"codes host name", append(mint, "--url", "https://example.com"), "only loopback"},
		{"codes without user", []string{"codes", "--url", "http://127.0.0.1:1", "--client", "rp", "--redirect-uri", "https://rp.invalid/cb", "--password-file", pw, "--out", "x"}, "codes needs"},
		{"codes zero count", append(mint, "--url", "http://127.0.0.1:1", "--count", "0"), "--count must be 1 to"},
		{"codes huge count", append(mint, "--url", "http://127.0.0.1:1", "--count", "100001"), "--count must be 1 to"},
		{"codes not a count", append(mint, "--url", "http://127.0.0.1:1", "--count", "ten"), "invalid value"},
		{"codes zero concurrency", append(mint, "--url", "http://127.0.0.1:1", "--concurrency", "0"), "--concurrency must be 1 to"},
		{"codes long duration", append(mint, "--url", "http://127.0.0.1:1", "--duration", "6m"), "--duration must be"},
		{"codes relative redirect", []string{"codes", "--url", "http://127.0.0.1:1", "--client", "rp", "--redirect-uri", "/cb", "--user", "u", "--password-file", pw, "--out", "x"}, "want an absolute URI"},
		{"codes missing password file", []string{"codes", "--url", "http://127.0.0.1:1", "--client", "rp", "--redirect-uri", "https://rp.invalid/cb", "--user", "u", "--password-file", filepath.Join(dir, "none"), "--out", "x"}, "no such file"},
		{"token without in", exchange, "token needs --in"},
		{"token without secret", []string{"token", "--in", good}, "token needs --in and --secret-file"},
		{"token bad auth", append(exchange, "--in", good, "--auth", "none"), "want basic"},
		{"token zero concurrency", append(exchange, "--in", good, "--concurrency", "0"), "--concurrency must be 1 to 256"},
		{"token huge concurrency", append(exchange, "--in", good, "--concurrency", "257"), "--concurrency must be 1 to 256"},
		{"token negative warm-up", append(exchange, "--in", good, "--warmup", "-1"), "--warmup not negative"},
		{"token zero duration", append(exchange, "--in", good, "--duration", "0s"), "--duration must be"},
		{"token fewer codes than warm-up", append(exchange, "--in", codes("few.json", "http://127.0.0.1:1/token", 50)), "not more than the warm-up"},
		{"token endpoint not loopback", append(exchange, "--in", codes("far.json", "https://192.0.2.1/token", 100)), "only loopback"},
		{"token endpoint malformed", append(exchange, "--in", codes("bad.json", "127.0.0.1/token", 100)), "want http(s)://127.0.0.1:PORT"},
		{"token not a codes file", append(exchange, "--in", pw), "invalid character"},
		{"token alg with a quote", append(exchange, "--in", good, "--alg", `ES256"`), "want a JWS algorithm name"},
		{"token alg oversized", append(exchange, "--in", good, "--alg", strings.Repeat("A", 1000)), "want a JWS algorithm name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error with %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestCodesAndToken mints codes at a loopback provider that shows a login
// form once per browser and then answers from its session, and redeems
// them, checking PKCE S256 and client_secret_basic.
func TestCodesAndToken(t *testing.T) {
	const redirect = "https://rp.invalid/cb"
	var mu sync.Mutex
	challenges := map[string]string{} // code → code_challenge
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q}`, srv.URL, srv.URL+"/authorize", srv.URL+"/token")
		case "/authorize":
			q := r.URL.Query()
			if q.Get("scope") != "openid" || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "rp" || q.Get("redirect_uri") != redirect {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			if _, err := r.Cookie("session"); err != nil {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprintf(w, `<form method="post" action="/login?%s"><input name="username"><input type="password" name="password">`+
					`<button name="decision" value="approve">OK</button></form>`, html.EscapeString(r.URL.RawQuery))
				return
			}
			code := randomString()
			mu.Lock()
			challenges[code] = q.Get("code_challenge")
			mu.Unlock()
			http.Redirect(w, r, redirect+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
		case "/login":
			if r.PostFormValue("username") != "u" || r.PostFormValue("password") != "a password" || r.PostFormValue("decision") != "approve" {
				http.Error(w, "bad login", http.StatusForbidden)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "1", Path: "/"})
			http.Redirect(w, r, "/authorize?"+r.URL.RawQuery, http.StatusSeeOther)
		case "/token":
			id, secret, _ := r.BasicAuth()
			mu.Lock()
			want, ok := challenges[r.PostFormValue("code")]
			delete(challenges, r.PostFormValue("code"))
			mu.Unlock()
			sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
			if id != "rp" || secret != "s3cret" || !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != want ||
				r.PostFormValue("grant_type") != "authorization_code" || r.PostFormValue("redirect_uri") != redirect {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
			// The header of an ES256 token: {"alg":"ES256","typ":"JWT"}.
			w.Write([]byte(`{"access_token":"a","token_type":"Bearer","id_token":"eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.p.s"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	pw, secret, file := filepath.Join(dir, "pw"), filepath.Join(dir, "secret"), filepath.Join(dir, "codes.json")
	writeFile(t, pw, "a password\n")
	writeFile(t, secret, "s3cret\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, []string{"codes", "--url", srv.URL, "--client", "rp", "--redirect-uri", redirect, "--user", "u",
		"--password-file", pw, "--count", "60", "--concurrency", "3", "--out", file}, &out); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 || !strings.HasPrefix(out.String(), "minted=60 of=60 ") {
		t.Fatalf("codes: %v %v %q", st, err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"token", "--in", file, "--secret-file", secret, "--concurrency", "4", "--warmup", "8", "--alg", "ES256"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "mode=token c=4 n=52 errors=0 ") { // 8 warm-up, 2 per worker
		t.Errorf("token: %q", out.String())
	}
	// The same codes again (8 warm-up, 2 per worker, then 52 counted):
	// every exchange fails, and the run says so.
	out.Reset()
	if err := run(ctx, []string{"token", "--in", file, "--secret-file", secret, "--concurrency", "4", "--warmup", "8"}, &out); err == nil ||
		!strings.Contains(out.String(), "errors=52 ") || !strings.Contains(out.String(), "invalid_grant") {
		t.Errorf("replayed codes: %v %q", err, out.String())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// idTokenWant finds an ID token of its algorithm in a token response,
// whatever follows "alg" in the header, and not one of another algorithm.
func TestIDTokenWant(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	for _, alg := range []string{"RS256", "PS256", "ES256", "EdDSA", "ES512", "Ed25519"} {
		for _, other := range []string{"RS256", "PS256", "ES256", "EdDSA"} {
			hdr := enc([]byte(`{"alg":"` + other + `","kid":"k1","typ":"JWT"}`))
			body := []byte(`{"access_token":"a","id_token":"` + hdr + `.cA.cw","token_type":"Bearer"}`)
			if got := bytes.Contains(body, idTokenWant(alg)); got != (alg == other) {
				t.Errorf("want %s, body of %s: counted %v", alg, other, got)
			}
		}
	}
	if string(idTokenWant("")) != `"id_token":"` {
		t.Errorf("no alg: %q", idTokenWant(""))
	}
}

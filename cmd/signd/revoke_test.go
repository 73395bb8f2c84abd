package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// The revocation matrix: every admin action that removes or disables what a
// grant hangs on × every artefact issued on its strength, through the real
// daemon (admin socket, Echo router, bbolt file, SoftHSM2 token). An
// artefact of the victim must stop working and be gone from the store;
// an artefact of another user, client or credential must keep working.

// rvKind is one kind of artefact and the endpoint that uses it.
type rvKind int

const (
	rvServiceToken      rvKind = iota // access token, scope service: /csc/v1/credentials/list
	rvOpenIDToken                     // access token, scope openid: /userinfo
	rvSAD                             // SAD: /csc/v1/signatures/signHash
	rvServiceCode                     // unredeemed code, scope service: /oauth2/token
	rvCredentialCode                  // unredeemed code, scope credential: /oauth2/token
	rvServicePending                  // pending request at consent, scope service: /oauth2/consent
	rvCredentialPending               // pending request at consent, scope credential (PIN): /oauth2/consent
	rvSession                         // login session cookie: SSO at /oauth2/authorize
	rvCredentialLogin                 // pending request at login, scope credential: /oauth2/login
	rvKinds
)

var rvKindNames = [...]string{
	"service token at /csc/v1/credentials/list", "openid token at /userinfo", "SAD at signHash",
	"service code at /oauth2/token", "credential code at /oauth2/token",
	"pending service request at /oauth2/consent", "pending credential request at /oauth2/consent",
	"SSO session at /oauth2/authorize", "pending credential request at /oauth2/login",
}

func (k rvKind) String() string { return rvKindNames[k] }
func (k rvKind) credential() bool {
	return k == rvSAD || k == rvCredentialCode || k == rvCredentialPending || k == rvCredentialLogin
}

// rvSet is everything one browser obtained for one user, client and
// credential.
type rvSet struct {
	name, user, client, cred string
	browser                  *oauthtest.Browser
	digest                   []byte
	serviceToken, openIDToken, sad,
	serviceCode, credentialCode string
	servicePending, credentialPending *oauthtest.Form
	credentialLogin                   *oauthtest.Form // no user yet: bound to client and credential only
}

// rvWorld is one daemon with users alice and bob, clients rp and rp2, and
// credentials a1, a2 (alice's, unless she has none) and b1 (bob's).
type rvWorld struct {
	t      *testing.T
	e      *env
	base   string
	stop   func()
	secret string
	pass   map[string]string // current password by user
	pin    map[string]string // current PIN by user
	creds  map[string]string // credential ID by name (a1, a2, b1)
	sets   []*rvSet
}

func newRVWorld(t *testing.T, aliceHasCredentials bool) *rvWorld {
	t.Helper()
	e := newEnv(t, "")
	w := &rvWorld{
		t: t, e: e, secret: strings.Repeat("c", 40),
		pass:  map[string]string{"alice": "alice's password", "bob": "bob's password"},
		pin:   map[string]string{"alice": "111111", "bob": "222222"},
		creds: map[string]string{},
	}
	for _, u := range []string{"alice", "bob"} {
		pinFile := e.file(u+".pin", []byte(w.pin[u]+"\n"))
		e.must(w.pass[u]+"\n", "user", "add", u, "--password-file", "-", "--pin-file", pinFile,
			"--email", u+"@example.com", "--email-verified")
	}
	secretFile := e.file("client.secret", []byte(w.secret+"\n"))
	for _, c := range []string{"rp", "rp2"} {
		e.must("", "client", "add", c, "--redirect-uri", "https://"+c+".example/cb", "--secret-file", secretFile,
			"--scope", "service", "--scope", "credential", "--scope", "openid")
	}
	if aliceHasCredentials {
		w.creds["a1"] = enrollKey(t, e, "alice", "CN=Alice One")
		w.creds["a2"] = enrollKey(t, e, "alice", "CN=Alice Two")
	}
	w.creds["b1"] = enrollKey(t, e, "bob", "CN=Bob One")
	w.start()
	return w
}

func (w *rvWorld) start() {
	addr, stop := w.e.startDaemon()
	w.base, w.stop = "http://"+addr, stop
}

// authorize starts a flow in b: the login page, or after SSO the consent
// page.
func (w *rvWorld) authorize(b *oauthtest.Browser, client, scope, cred string, digest []byte) *oauthtest.Step {
	w.t.Helper()
	q := url.Values{
		"response_type": {"code"}, "client_id": {client}, "redirect_uri": {"https://" + client + ".example/cb"},
		"scope": {scope}, "state": {"st-" + scope}, "lang": {"en"},
	}
	if scope == "credential" {
		q.Set("credentialID", cred)
		q.Set("numSignatures", "1")
		q.Set("hash", base64.RawURLEncoding.EncodeToString(digest))
	}
	s, err := b.Get(w.base + "/oauth2/authorize?" + q.Encode())
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

// toConsent runs a flow of s up to its consent page and returns the form.
func (w *rvWorld) toConsent(s *rvSet, scope string) *oauthtest.Form {
	w.t.Helper()
	st := w.login(s, scope)
	if st.Form == nil || st.Form.Has("password") {
		w.t.Fatalf("set %s, %s: no consent page: %d %v %s", s.name, scope, st.Status, st.Location, oauthtest.Text(st.Body))
	}
	return st.Form
}

// login starts a flow of s and logs in when the login page comes: it
// returns the consent page, or the redirect when the profile shows none.
func (w *rvWorld) login(s *rvSet, scope string) *oauthtest.Step {
	w.t.Helper()
	st := w.authorize(s.browser, s.client, scope, w.creds[s.cred], s.digest)
	if st.Form != nil && st.Form.Has("password") {
		var err error
		if st, err = s.browser.Submit(st.Form, map[string]string{"username": s.user, "password": w.pass[s.user]}, "approve"); err != nil {
			w.t.Fatal(err)
		}
	}
	return st
}

// approve answers a consent form; it returns the code, or "" when the
// answer was anything but a redirect with a code.
func (w *rvWorld) approve(s *rvSet, f *oauthtest.Form) string {
	w.t.Helper()
	set := map[string]string{}
	if f.Has("pin") {
		set["pin"] = w.pin[s.user]
	}
	st, err := s.browser.Submit(f, set, "approve")
	if err != nil {
		w.t.Fatal(err)
	}
	if !st.Redirected() {
		return ""
	}
	return st.Query().Get("code")
}

// exchange redeems a code at the token endpoint; it returns the token, or
// "" with the error answer.
func (w *rvWorld) exchange(s *rvSet, code string) (string, string) {
	w.t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"https://" + s.client + ".example/cb"}}
	req, _ := http.NewRequest(http.MethodPost, w.base+"/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(s.client, w.secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	data, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(data, &body)
	if tok, _ := body["access_token"].(string); res.StatusCode == http.StatusOK && tok != "" {
		return tok, ""
	}
	return "", fmt.Sprintf("%d %s", res.StatusCode, data)
}

// code runs a whole flow and returns the code.
func (w *rvWorld) code(s *rvSet, scope string) string {
	w.t.Helper()
	var c string
	switch st := w.login(s, scope); {
	case st.Redirected():
		c = st.Query().Get("code") // no consent page (scope openid alone)
	case st.Form != nil && !st.Form.Has("password"):
		c = w.approve(s, st.Form)
	}
	if c == "" {
		w.t.Fatalf("set %s, %s: no code", s.name, scope)
	}
	return c
}

// token runs a whole flow and redeems the code.
func (w *rvWorld) token(s *rvSet, scope string) string {
	w.t.Helper()
	tok, why := w.exchange(s, w.code(s, scope))
	if tok == "" {
		w.t.Fatalf("set %s, %s: token endpoint: %s", s.name, scope, why)
	}
	return tok
}

// obtain fills a set through the real endpoints, as its user's browser and
// its client would. Pending requests come last: they wait at consent.
func (w *rvWorld) obtain(name, user, client, cred string) *rvSet {
	w.t.Helper()
	d := sha256.Sum256([]byte("document of set " + name))
	s := &rvSet{name: name, user: user, client: client, cred: cred, browser: oauthtest.NewBrowser(nil), digest: d[:]}
	s.serviceToken = w.token(s, "service")
	s.openIDToken = w.token(s, "openid")
	s.serviceCode = w.code(s, "service")
	if cred != "" {
		s.sad = w.token(s, "credential")
		s.credentialCode = w.code(s, "credential")
		s.credentialPending = w.toConsent(s, "credential")
		// A credential flow asks for the password every time (no SSO).
		st := w.authorize(s.browser, s.client, "credential", w.creds[s.cred], s.digest)
		if st.Form == nil || !st.Form.Has("password") {
			w.t.Fatalf("set %s: no login page for a credential flow: %d %s", name, st.Status, oauthtest.Text(st.Body))
		}
		s.credentialLogin = st.Form
	}
	s.servicePending = w.toConsent(s, "service")
	w.sets = append(w.sets, s)
	return s
}

func (s *rvSet) has(k rvKind) bool { return !k.credential() || s.cred != "" }

// sessionHash is the fingerprint of the set's login session cookie.
func (w *rvWorld) sessionHash(s *rvSet) []byte {
	w.t.Helper()
	u, _ := url.Parse(w.base + "/oauth2/authorize")
	for _, c := range s.browser.HTTP.Jar.Cookies(u) {
		if c.Name == "signd_session" {
			return store.Fingerprint(c.Value)
		}
	}
	w.t.Fatalf("set %s has no session cookie", s.name)
	return nil
}

// stored reports whether the record of artefact k of s is still in the
// store (the daemon must be stopped). An unredeemed code counts; a
// tombstone would not.
func (w *rvWorld) stored(tx store.Tx, s *rvSet, k rvKind) bool {
	w.t.Helper()
	var err error
	switch k {
	case rvServiceToken:
		_, err = tx.Token(store.Fingerprint(s.serviceToken))
	case rvOpenIDToken:
		_, err = tx.Token(store.Fingerprint(s.openIDToken))
	case rvSAD:
		_, err = tx.Token(store.Fingerprint(s.sad))
	case rvServiceCode, rvCredentialCode:
		c := s.serviceCode
		if k == rvCredentialCode {
			c = s.credentialCode
		}
		var ac *store.AuthCode
		if ac, err = tx.Code(store.Fingerprint(c)); err == nil && !ac.RedeemedAt.IsZero() {
			w.t.Fatalf("set %s: %v was redeemed", s.name, k)
		}
	case rvServicePending:
		_, err = tx.AuthRequest(store.Fingerprint(s.servicePending.Fields.Get("request")))
	case rvCredentialPending:
		_, err = tx.AuthRequest(store.Fingerprint(s.credentialPending.Fields.Get("request")))
	case rvCredentialLogin:
		_, err = tx.AuthRequest(store.Fingerprint(s.credentialLogin.Fields.Get("request")))
	case rvSession:
		_, err = tx.Session(w.sessionHash(s))
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.t.Fatal(err)
	}
	return err == nil
}

// works uses artefact k of s at its endpoint and reports whether it was
// honoured; why describes the answer.
func (w *rvWorld) works(s *rvSet, k rvKind) (ok bool, why string) {
	w.t.Helper()
	switch k {
	case rvServiceToken:
		status, body := postJSON(w.t, w.base+"/csc/v1/credentials/list", s.serviceToken, `{}`)
		return status == http.StatusOK, fmt.Sprintf("%d %v", status, body)
	case rvOpenIDToken:
		req, _ := http.NewRequest(http.MethodGet, w.base+"/userinfo", nil)
		req.Header.Set("Authorization", "Bearer "+s.openIDToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			w.t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		return res.StatusCode == http.StatusOK, fmt.Sprintf("%d %s %s", res.StatusCode, res.Header.Get("WWW-Authenticate"), data)
	case rvSAD:
		body, _ := json.Marshal(map[string]any{
			"credentialID": w.creds[s.cred], "SAD": s.sad, "hash": []string{base64.StdEncoding.EncodeToString(s.digest)},
			"signAlgo": "1.2.840.113549.1.1.1", "hashAlgo": "2.16.840.1.101.3.4.2.1",
		})
		status, res := postJSON(w.t, w.base+"/csc/v1/signatures/signHash", s.serviceToken, string(body))
		return status == http.StatusOK, fmt.Sprintf("%d %v", status, res)
	case rvServiceCode, rvCredentialCode:
		c := s.serviceCode
		if k == rvCredentialCode {
			c = s.credentialCode
		}
		tok, why := w.exchange(s, c)
		return tok != "", why
	case rvServicePending, rvCredentialPending:
		f := s.servicePending
		if k == rvCredentialPending {
			f = s.credentialPending
		}
		set := map[string]string{}
		if f.Has("pin") {
			set["pin"] = w.pin[s.user]
		}
		st, err := s.browser.Submit(w.here(f), set, "approve")
		if err != nil {
			w.t.Fatal(err)
		}
		return st.Redirected() && st.Query().Get("code") != "", fmt.Sprintf("%d %v %.200s", st.Status, st.Location, oauthtest.Text(st.Body))
	case rvCredentialLogin:
		st, err := s.browser.Submit(w.here(s.credentialLogin), map[string]string{"username": s.user, "password": w.pass[s.user]}, "approve")
		if err != nil {
			w.t.Fatal(err)
		}
		// Logged in: the consent page, which asks the PIN.
		return st.Form != nil && st.Form.Has("pin"), fmt.Sprintf("%d %v %.200s", st.Status, st.Location, oauthtest.Text(st.Body))
	case rvSession:
		st := w.authorize(s.browser, "rp2", "service", "", nil)
		return st.Form != nil && !st.Form.Has("password"), fmt.Sprintf("%d %v %.200s", st.Status, st.Location, oauthtest.Text(st.Body))
	}
	return false, "unknown kind"
}

// here returns a copy of f that posts to the running daemon, which may
// have restarted on another port since the page was shown.
func (w *rvWorld) here(f *oauthtest.Form) *oauthtest.Form {
	base, _ := url.Parse(w.base)
	g := *f
	action := *f.Action
	action.Host = base.Host
	g.Action = &action
	return &g
}

// wantRevoked is the admin output's count of what dead must have removed.
func (w *rvWorld) wantRevoked(dead func(*rvSet, rvKind) bool) map[string]int {
	want := map[string]int{"access_tokens": 0, "sads": 0, "codes": 0, "pending_requests": 0, "sessions": 0}
	field := [...]string{"access_tokens", "access_tokens", "sads", "codes", "codes", "pending_requests", "pending_requests", "sessions", "pending_requests"}
	for _, s := range w.sets {
		for k := range rvKinds {
			if s.has(k) && dead(s, k) {
				want[field[k]]++
			}
		}
	}
	return want
}

func TestRevocationMatrix(t *testing.T) {
	rows := []struct {
		name        string
		aliceCreds  bool
		args        []string // the admin command; {a1} is a1's credential ID
		stdin       string
		newPassword string                        // alice's password after the command
		newPIN      string                        // alice's PIN after the command
		dead        func(s *rvSet, k rvKind) bool // no longer works
		// revoked is what the command removes from the store; nil = dead.
		// A request still at the login step names no user: a user action
		// leaves it, and the login refuses the user (or asks the new
		// password).
		revoked func(s *rvSet, k rvKind) bool
	}{
		{
			name: "client_remove", aliceCreds: true, args: []string{"client", "remove", "rp"},
			dead: func(s *rvSet, k rvKind) bool { return s.client == "rp" && k != rvSession },
		},
		{
			name: "user_disable", aliceCreds: true, args: []string{"user", "disable", "alice"},
			dead:    func(s *rvSet, _ rvKind) bool { return s.user == "alice" },
			revoked: func(s *rvSet, k rvKind) bool { return s.user == "alice" && k != rvCredentialLogin },
		},
		{
			name: "password_reset", aliceCreds: true, args: []string{"user", "set-password", "alice", "--password-file", "-"},
			stdin: "alice's new password\n", newPassword: "alice's new password",
			dead: func(s *rvSet, k rvKind) bool { return s.user == "alice" && k != rvCredentialLogin },
		},
		{
			name: "pin_reset", aliceCreds: true, args: []string{"user", "set-pin", "alice", "--pin-file", "-"},
			stdin: "999999\n", newPIN: "999999",
			dead: func(s *rvSet, k rvKind) bool { return s.user == "alice" && k.credential() && k != rvCredentialLogin },
		},
		{
			name: "credential_disable", aliceCreds: true, args: []string{"credential", "disable", "{a1}"},
			dead: func(s *rvSet, k rvKind) bool { return s.cred == "a1" && k.credential() },
		},
		{
			// The user owns no credential (user remove refuses otherwise),
			// so holds no SAD, credential code or credential request.
			name: "user_remove", args: []string{"user", "remove", "alice"},
			dead: func(s *rvSet, _ rvKind) bool { return s.user == "alice" },
		},
		{
			name: "credential_remove", aliceCreds: true, args: []string{"credential", "remove", "{a1}"},
			dead: func(s *rvSet, k rvKind) bool { return s.cred == "a1" && k.credential() },
		},
	}
	for _, row := range rows {
		if row.revoked == nil {
			row.revoked = row.dead
		}
		t.Run(row.name, func(t *testing.T) {
			w := newRVWorld(t, row.aliceCreds)
			if row.aliceCreds {
				w.obtain("A", "alice", "rp", "a1")  // the victim
				w.obtain("B", "alice", "rp", "a2")  // same user and client, other credential
				w.obtain("C", "alice", "rp2", "a1") // same user and credential, other client
			} else {
				w.obtain("A", "alice", "rp", "")
				w.obtain("C", "alice", "rp2", "")
			}
			w.obtain("D", "bob", "rp", "b1") // other user, same client
			var keyIDs map[string]string     // credential name → hex CKA_ID
			if row.name == "credential_remove" {
				keyIDs = w.keyIDs()
			}

			// The admin action, through the daemon's admin socket.
			args := make([]string, len(row.args))
			for i, a := range row.args {
				args[i] = strings.ReplaceAll(a, "{a1}", w.creds["a1"])
			}
			out := w.e.must(row.stdin, append(args, "--json")...)
			var res struct{ Revoked map[string]int }
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if want := w.wantRevoked(row.revoked); fmt.Sprint(res.Revoked) != fmt.Sprint(want) {
				t.Errorf("the command reports revoked %v, want %v", res.Revoked, want)
			}
			if row.newPassword != "" {
				w.pass["alice"] = row.newPassword
			}
			if row.newPIN != "" {
				w.pin["alice"] = row.newPIN
			}

			// Revoked at the action: the records are gone from the store.
			w.stop()
			db := w.e.openStore()
			err := db.View(context.Background(), func(tx store.Tx) error {
				for _, s := range w.sets {
					for k := range rvKinds {
						if !s.has(k) {
							continue
						}
						if got, want := w.stored(tx, s, k), !row.revoked(s, k); got != want {
							t.Errorf("set %s (%s/%s/%s), %v: stored %v after the command, want %v",
								s.name, s.user, s.client, s.cred, k, got, want)
						}
					}
				}
				return nil
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			if keyIDs != nil {
				w.checkKeys(keyIDs, "a1")
			}

			// And refused at use; the others still work.
			w.start()
			for _, s := range w.sets {
				for k := range rvKinds {
					if !s.has(k) {
						continue
					}
					ok, why := w.works(s, k)
					if dead := row.dead(s, k); ok == dead {
						t.Errorf("set %s (%s/%s/%s), %v: works %v, want %v: %s",
							s.name, s.user, s.client, s.cred, k, ok, !dead, why)
					}
				}
			}
		})
	}
}

// keyIDs returns the HSM key IDs of the world's credentials.
func (w *rvWorld) keyIDs() map[string]string {
	w.t.Helper()
	out := map[string]string{}
	for name, id := range w.creds {
		var v struct {
			KeyID string `json:"key_id"`
		}
		if err := json.Unmarshal([]byte(w.e.must("", "credential", "show", id, "--json")), &v); err != nil {
			w.t.Fatal(err)
		}
		out[name] = v.KeyID
	}
	return out
}

// checkKeys opens the token (the daemon must be stopped) and checks that
// the key of gone has left it and every other key is still there.
func (w *rvWorld) checkKeys(keyIDs map[string]string, gone string) {
	w.t.Helper()
	tok, err := hsm.Open(hsm.Config{Module: token.Module, TokenLabel: token.Label, PIN: token.PIN})
	if err != nil {
		w.t.Fatal(err)
	}
	defer tok.Close()
	for name, hexID := range keyIDs {
		id, _ := hex.DecodeString(hexID)
		_, err := tok.Key(context.Background(), id)
		switch {
		case name == gone && !errors.Is(err, hsm.ErrKeyNotFound):
			w.t.Errorf("key of removed credential %s: %v, want ErrKeyNotFound", name, err)
		case name != gone && err != nil:
			w.t.Errorf("key of credential %s: %v", name, err)
		}
	}
}

// TestRevocationMissedByIndex: tokens and a SAD whose party index entries
// are missing (deleted from the bbolt file directly) are not found by the
// admin action's revocation, and still fail at use, because the checks at
// use look at the client, the user and the credential themselves.
func TestRevocationMissedByIndex(t *testing.T) {
	rows := []struct {
		name string
		args []string // {a1}: the credential ID
		// what fails afterwards (the SAD is used with the service token)
		serviceToken, openIDToken, sad bool
		sadDesc                        string // error_description when the bearer passes
	}{
		{name: "client_remove", args: []string{"client", "remove", "rp"}, serviceToken: true, openIDToken: true, sad: true},
		{name: "user_disable", args: []string{"user", "disable", "alice"}, serviceToken: true, openIDToken: true, sad: true},
		{name: "credential_disable", args: []string{"credential", "disable", "{a1}"}, sad: true,
			sadDesc: "The credential identified by credentialID is disabled"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			e := newEnv(t, "")
			e.must("a long password\n", "user", "add", "alice", "--password-file", "-", "--email", "alice@example.com", "--email-verified")
			e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb", "--scope", "service", "--scope", "credential", "--scope", "openid")
			a1 := enrollKey(t, e, "alice", "CN=Alice")
			d := sha256.Sum256([]byte("unindexed"))
			service := e.mint(store.TokenAccess, "alice", "rp", "")
			sad := e.mint(store.TokenSAD, "alice", "rp", a1, d[:])
			openID := e.mintScoped("alice", "rp", "openid")
			unindex(t, filepath.Join(e.dir, "signd.db"), service, sad, openID)

			addr, _ := e.startDaemon()
			base := "http://" + addr
			args := make([]string, len(row.args))
			for i, a := range row.args {
				args[i] = strings.ReplaceAll(a, "{a1}", a1)
			}
			out := e.must("", append(args, "--json")...)
			if !strings.Contains(out, `"access_tokens": 0`) || !strings.Contains(out, `"sads": 0`) {
				t.Fatalf("the index found the tokens after all: %s", out)
			}

			status, body := postJSON(t, base+"/csc/v1/credentials/list", service, `{}`)
			if failed := status != http.StatusOK; failed != row.serviceToken {
				t.Errorf("service token: %d %v, want refused %v", status, body, row.serviceToken)
			} else if failed && (status != http.StatusUnauthorized || body["error"] != "invalid_token") {
				t.Errorf("service token: %d %v, want 401 invalid_token", status, body)
			}
			req, _ := http.NewRequest(http.MethodGet, base+"/userinfo", nil)
			req.Header.Set("Authorization", "Bearer "+openID)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if failed := res.StatusCode != http.StatusOK; failed != row.openIDToken {
				t.Errorf("openid token: %d, want refused %v", res.StatusCode, row.openIDToken)
			} else if failed && (res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_token"`)) {
				t.Errorf("openid token: %d %q, want 401 invalid_token", res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
			sign, _ := json.Marshal(map[string]any{
				"credentialID": a1, "SAD": sad, "hash": []string{base64.StdEncoding.EncodeToString(d[:])},
				"signAlgo": "1.2.840.113549.1.1.1", "hashAlgo": "2.16.840.1.101.3.4.2.1",
			})
			status, body = postJSON(t, base+"/csc/v1/signatures/signHash", service, string(sign))
			if failed := status != http.StatusOK; failed != row.sad {
				t.Errorf("SAD: %d %v, want refused %v", status, body, row.sad)
			} else if row.sadDesc != "" && body["error_description"] != row.sadDesc {
				t.Errorf("SAD: %d %v, want %q", status, body, row.sadDesc)
			}
		})
	}
}

// mintScoped stores an access token with one scope (the daemon must not
// run).
func (e *env) mintScoped(user, client, scope string) string {
	e.t.Helper()
	v := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte(scope), 8))
	db := e.openStore()
	defer db.Close()
	err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{Hash: store.Fingerprint(v), Kind: store.TokenAccess, ClientID: client,
			Username: user, Scopes: []string{scope}, AuthTime: time.Now(), ExpiresAt: time.Now().Add(time.Hour)})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// unindex deletes every party index entry of the tokens with these values
// from the bbolt file, as if they had been written by a path that skipped
// the index.
func unindex(t *testing.T, path string, values ...string) {
	t.Helper()
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	err = raw.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("tokens_by_party"))
		if b == nil {
			return errors.New("no tokens_by_party bucket")
		}
		var keys [][]byte
		for _, v := range values {
			h := store.Fingerprint(v)
			n := 0
			if err := b.ForEach(func(k, _ []byte) error {
				if bytes.HasSuffix(k, h) {
					keys, n = append(keys, bytes.Clone(k)), n+1
				}
				return nil
			}); err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("token %.8s… has no index entry to delete", v)
			}
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRevocationRacesRedemption: codes are redeemed at the token endpoint
// while an admin disables their user, all released at once. Redemption and
// revocation are serialized write transactions: a token minted before the
// disable is revoked by it, a redemption after it is refused. No token of
// the user survives, whatever the interleaving.
func TestRevocationRacesRedemption(t *testing.T) {
	w := newRVWorld(t, false)
	s := &rvSet{name: "A", user: "alice", client: "rp", browser: oauthtest.NewBrowser(nil)}
	codes := make([]string, 12)
	for i := range codes {
		codes[i] = w.code(s, "service")
	}
	tokens := make([]string, len(codes))
	errs := make(chan error, len(codes)+1)
	start := make(chan struct{})
	var done sync.WaitGroup
	for i, c := range codes {
		done.Add(1)
		go func() {
			defer done.Done()
			<-start
			form := url.Values{"grant_type": {"authorization_code"}, "code": {c}, "redirect_uri": {"https://rp.example/cb"}}
			req, _ := http.NewRequest(http.MethodPost, w.base+"/oauth2/token", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth("rp", w.secret)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			var body struct {
				AccessToken string `json:"access_token"`
				Error       string `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				errs <- err
				return
			}
			switch {
			case res.StatusCode == http.StatusOK:
				tokens[i] = body.AccessToken
			case body.Error != "invalid_grant":
				errs <- fmt.Errorf("token endpoint: %d %s", res.StatusCode, body.Error)
			}
		}()
	}
	done.Add(1)
	go func() {
		defer done.Done()
		<-start
		if _, errOut, err := w.e.run("", "user", "disable", "alice"); err != nil {
			errs <- fmt.Errorf("user disable: %v %s", err, errOut)
		}
	}()
	close(start)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	w.stop()
	db := w.e.openStore()
	defer db.Close()
	minted := 0
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for _, tok := range tokens {
			if tok == "" {
				continue
			}
			minted++
			if _, err := tx.Token(store.Fingerprint(tok)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a token minted in the race survived the disable: %v", err)
			}
		}
		r, err := tx.RevokeUser("alice")
		if r.Total() != 0 {
			t.Errorf("after the disable, alice still has %+v", r)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d redemptions won the race", minted, len(codes))
}

// TestRevokeRefreshTokenDaemon: through the real daemon (auth/login on,
// bbolt file, SoftHSM2), a refresh token is rotated once and then revoked
// — at /oauth2/revoke by its client, or at CSC auth/revoke by its bearer;
// the current refresh token or the rotated one. Every access token of that
// login, of both generations, is then refused by credentials/list with 401
// invalid_token and its refresh tokens refresh nothing (RFC 7009 §2.1);
// another auth/login of the same user and client, and a code flow's token,
// keep working.
func TestRevokeRefreshTokenDaemon(t *testing.T) {
	e := newEnv(t, authLoginConfig)
	_, base, _ := startJourney(t, e)
	coded := oauthFlow(t, base)("service", "st-code-flow").AccessToken

	login := func(t *testing.T) (access, refresh string) {
		t.Helper()
		status, _, m := cscCall(t, base, "auth/login", basic("alice", journeyPassword), `{"rememberMe":true}`)
		access, _ = m["access_token"].(string)
		refresh, _ = m["refresh_token"].(string)
		if status != 200 || access == "" || refresh == "" {
			t.Fatalf("auth/login: %d %v", status, m)
		}
		return access, refresh
	}
	refresh := func(t *testing.T, token string) (status int, access, next string, m map[string]any) {
		t.Helper()
		status, _, m = cscCall(t, base, "auth/login", "", `{"refresh_token":"`+token+`"}`)
		access, _ = m["access_token"].(string)
		next, _ = m["refresh_token"].(string)
		return status, access, next, m
	}
	endpoints := map[string]func(t *testing.T, bearer, token string){
		"oauth2/revoke": func(t *testing.T, _, token string) {
			res, err := oauthtest.PostClientForm(http.DefaultClient, base+"/oauth2/revoke", url.Values{"token": {token}}, "rp", journeySecret)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("oauth2/revoke: %d", res.StatusCode)
			}
		},
		"auth/revoke": func(t *testing.T, bearer, token string) {
			status, _, m := cscCall(t, base, "auth/revoke", "Bearer "+bearer, `{"token":"`+token+`","token_type_hint":"refresh_token"}`)
			if status != 204 {
				t.Fatalf("auth/revoke: %d %v", status, m)
			}
		},
	}
	for name, revoke := range endpoints {
		for _, which := range []string{"current", "rotated"} {
			t.Run(name+"/"+which, func(t *testing.T) {
				access1, refresh1 := login(t)
				status, access2, refresh2, m := refresh(t, refresh1)
				if status != 200 || access2 == "" || refresh2 == "" {
					t.Fatalf("refresh: %d %v", status, m)
				}
				otherAccess, otherRefresh := login(t)

				victim := refresh2
				if which == "rotated" {
					victim = refresh1
				}
				revoke(t, access2, victim)

				for what, tok := range map[string]string{"first access token": access1, "refreshed access token": access2} {
					status, m := postJSON(t, base+"/csc/v1/credentials/list", tok, `{}`)
					wantCSCError(t, what+" of the revoked login", status, m, 401, "invalid_token", "The access token is invalid or revoked")
				}
				status, _, _, m = refresh(t, refresh2)
				wantCSCError(t, "refresh of the revoked login", status, m, 400, "invalid_request", "Invalid parameter refresh_token")
				for what, tok := range map[string]string{"another login's access token": otherAccess, "a code flow's access token": coded} {
					if status, m := postJSON(t, base+"/csc/v1/credentials/list", tok, `{}`); status != 200 {
						t.Errorf("%s after the revocation: %d %v", what, status, m)
					}
				}
				if status, _, _, m := refresh(t, otherRefresh); status != 200 {
					t.Errorf("another login's refresh after the revocation: %d %v", status, m)
				}
			})
		}
	}
}

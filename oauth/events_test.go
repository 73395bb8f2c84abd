package oauth_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// Security events in the audit log: every login attempt through every door,
// the locks, the account page's acts and the logout, each one entry in the
// product's own storage (a bbolt file) with the user, the client, the
// remote address the router believes, and never a secret.

// eventsEnv is an env over a bbolt file with the account page, whose
// password checker locks after 3 failures.
func eventsEnv(t *testing.T) *env {
	t.Helper()
	db := backends.Bolt(t, bolt.Options{})
	return buildEnvWith(t, db, false, envOptions{account: true, passwords: func(c *passwords.Config) { c.MaxFailures = 3 }})
}

// auditLog returns the audit log's entries and its stored encoding, line
// by line; the chain must verify.
func (ev *env) auditLog() ([]*store.AuditEntry, string) {
	ev.t.Helper()
	var entries []*store.AuditEntry
	var raw strings.Builder
	err := ev.db.View(context.Background(), func(tx store.Tx) error {
		if _, _, err := store.VerifyAudit(tx); err != nil {
			return err
		}
		if err := tx.AuditRecords(1, func(_ uint64, b []byte) error {
			raw.Write(b)
			raw.WriteByte('\n')
			return nil
		}); err != nil {
			return err
		}
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error { entries = append(entries, e); return nil })
	})
	if err != nil {
		ev.t.Fatal(err)
	}
	return entries, raw.String()
}

// since returns the entries after the first n.
func (ev *env) since(n int) []*store.AuditEntry {
	ev.t.Helper()
	entries, _ := ev.auditLog()
	return entries[n:]
}

// wantEvent is what an entry must say; Fields are compared whole.
type wantEvent struct {
	kind                              store.AuditKind
	user, client, ip, outcome, reason string
	actor, target                     string
	fields                            map[string]string
}

func (w wantEvent) String() string {
	return fmt.Sprintf("%s user=%q client=%q ip=%q outcome=%q reason=%q actor=%q target=%q fields=%v",
		w.kind, w.user, w.client, w.ip, w.outcome, w.reason, w.actor, w.target, w.fields)
}

func eventOf(e *store.AuditEntry) wantEvent {
	return wantEvent{kind: e.Kind, user: e.User, client: e.Client, ip: e.IP, outcome: e.Outcome, reason: e.Reason,
		actor: e.Actor, target: e.Target, fields: e.Fields}
}

// wantEvents checks that got are exactly want, in order.
func wantEvents(t *testing.T, what string, got []*store.AuditEntry, want ...wantEvent) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g := eventOf(got[i])
		ok = g.kind == want[i].kind && g.user == want[i].user && g.client == want[i].client && g.ip == want[i].ip &&
			g.outcome == want[i].outcome && g.reason == want[i].reason && g.actor == want[i].actor &&
			g.target == want[i].target && maps.Equal(g.fields, want[i].fields)
	}
	if !ok {
		var gs []string
		for _, e := range got {
			gs = append(gs, eventOf(e).String())
		}
		var ws []string
		for _, w := range want {
			ws = append(ws, w.String())
		}
		t.Errorf("%s: audit entries\n  %s\nwant\n  %s", what, strings.Join(gs, "\n  "), strings.Join(ws, "\n  "))
	}
}

// login is the login entry of a login-page attempt from ip.
func loginEvent(user, ip, method, outcome, reason string) wantEvent {
	w := wantEvent{kind: store.AuditLogin, user: user, client: "rp", ip: ip, outcome: outcome, reason: reason,
		fields: map[string]string{"method": method, "door": passwords.DoorLoginPage}}
	if user != "" {
		w.target = "user:" + user
	}
	return w
}

// TestLoginAttemptsAudited: each answer of the login page — right, wrong,
// an unknown or disabled user, a TOTP user's wrong, right and replayed
// code — is one login entry naming the account (none for an unknown
// name: that text is not recorded), the client, the remote address the
// router believes (X-Forwarded-For from its trusted peer), the method and
// the door; the lock that the third failure sets is a user_locked entry
// in the same transaction; the account page's login is audited the same
// way. No password, code or typed username is in the log.
func TestLoginAttemptsAudited(t *testing.T) {
	ev := eventsEnv(t)
	const ip = "203.0.113.7"
	b := ev.browserFrom(ip)
	loginPage := func() *oauthtest.Step {
		return page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
	}
	submit := func(s *oauthtest.Step, set map[string]string) *oauthtest.Step {
		t.Helper()
		return ev.must(b.Submit(s.Form, set, "approve"))
	}
	const unknownName = "mallory-typed-\u00e9-name"
	code := func() string {
		c, err := totp.GenerateCode(bobTOTP, ev.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var secrets []string

	steps := []struct {
		name string
		set  map[string]string
		want []wantEvent
	}{
		{"wrong password", map[string]string{"username": "alice", "password": "alice-wrong-guess-1"},
			[]wantEvent{loginEvent("alice", ip, "password", store.AuditFailed, "wrong password")}},
		{"unknown user", map[string]string{"username": unknownName, "password": "unknown-user-guess"},
			[]wantEvent{{kind: store.AuditLogin, client: "rp", ip: ip, outcome: store.AuditFailed, reason: "unknown user",
				fields: map[string]string{"method": "password", "door": passwords.DoorLoginPage}}}},
		{"disabled user", map[string]string{"username": "carol", "password": carolPassword},
			[]wantEvent{loginEvent("carol", ip, "password", store.AuditRefused, "account disabled")}},
		{"totp user, wrong code", map[string]string{"username": "bob", "password": bobPassword, "otp": ev.wrongCode()},
			[]wantEvent{loginEvent("bob", ip, "totp", store.AuditFailed, "wrong one-time code")}},
		{"right password", map[string]string{"username": "alice", "password": alicePassword},
			[]wantEvent{loginEvent("alice", ip, "password", store.AuditOK, "")}},
	}
	for _, st := range steps {
		n := len(ev.since(0))
		s := submit(loginPage(), st.set)
		wantEvents(t, st.name, ev.since(n), st.want...)
		if loggedIn := s.Form != nil && !s.Form.Has("password"); loggedIn != (st.want[0].outcome == store.AuditOK) {
			t.Fatalf("%s: logged in %v: %.300s", st.name, loggedIn, oauthtest.Text(s.Body))
		}
		secrets = append(secrets, st.set["password"], st.set["otp"])
	}

	// bob: a right code logs in; the same code again is a replay.
	b = ev.browserFrom(ip)
	right := code()
	n := len(ev.since(0))
	if s := submit(loginPage(), map[string]string{"username": "bob", "password": bobPassword, "otp": right}); s.Form == nil || s.Form.Has("password") {
		t.Fatalf("bob's right code: %.300s", oauthtest.Text(s.Body))
	}
	b = ev.browserFrom(ip)
	submit(loginPage(), map[string]string{"username": "bob", "password": bobPassword, "otp": right})
	wantEvents(t, "totp right, then replayed", ev.since(n),
		loginEvent("bob", ip, "totp", store.AuditOK, ""),
		loginEvent("bob", ip, "totp", store.AuditFailed, "replayed one-time code"))
	secrets = append(secrets, right)

	// dave: three wrong passwords lock (MaxFailures 3); the fourth guess,
	// the right password, is refused without evaluation.
	n = len(ev.since(0))
	for i := range 3 {
		pw := fmt.Sprintf("dave-wrong-guess-%d", i)
		submit(loginPage(), map[string]string{"username": "dave", "password": pw})
		secrets = append(secrets, pw)
	}
	submit(loginPage(), map[string]string{"username": "dave", "password": davePassword})
	until := ev.user("dave").PasswordLockedUntil
	if until.IsZero() {
		t.Fatal("dave is not locked")
	}
	failed := loginEvent("dave", ip, "password", store.AuditFailed, "wrong password")
	wantEvents(t, "lockout", ev.since(n), failed, failed, failed,
		wantEvent{kind: store.AuditLoginLock, user: "dave", target: "user:dave", client: "rp", ip: ip, outcome: store.AuditOK,
			fields: map[string]string{"failures": "3", "until": until.UTC().Format(time.RFC3339), "door": passwords.DoorLoginPage}},
		loginEvent("dave", ip, "password", store.AuditRefused, "account locked"))

	// The account page's login form: the same entries, its door, no client.
	n = len(ev.since(0))
	ab := ev.browserFrom("2001:db8::1")
	s := ev.must(ab.Get(ev.ts.URL + "/oauth2/account?lang=en"))
	v := s.Form.Values(map[string]string{"username": "alice", "password": "alice-wrong-on-account"})
	ev.accountPost(ab, "/oauth2/account/login", v, chromiumSameOrigin())
	wantEvents(t, "account page login", ev.since(n), wantEvent{kind: store.AuditLogin, user: "alice", target: "user:alice",
		ip: "2001:db8::1", outcome: store.AuditFailed, reason: "wrong password",
		fields: map[string]string{"method": "password", "door": passwords.DoorAccountPage}})
	secrets = append(secrets, "alice-wrong-on-account")

	_, raw := ev.auditLog()
	for _, s := range append(secrets, alicePassword, bobPassword, carolPassword, davePassword, unknownName, "mallory") {
		if s != "" && strings.Contains(raw, s) {
			t.Errorf("the audit log contains %q", s)
		}
	}
}

// TestParallelWrongPasswordsAudited: eight wrong passwords for one account
// posted at once. MaxFailures (3) of them are evaluated, the rest refused
// without a hash: exactly eight login entries (three failed, five
// refused), exactly one user_locked entry, and the chain verifies.
func TestParallelWrongPasswordsAudited(t *testing.T) {
	ev := eventsEnv(t)
	const n = 8
	forms := make([]*oauthtest.Step, n)
	browsers := make([]*oauthtest.Browser, n)
	for i := range n {
		browsers[i] = ev.browserFrom(fmt.Sprintf("198.51.100.%d", i+1))
		forms[i] = page(t, ev.must(browsers[i].Get(ev.authorizeURL(serviceParams()))))
	}
	before := len(ev.since(0))
	errs := make([]error, n)
	storetest.AtOnce(n, func(i int) {
		_, errs[i] = browsers[i].Submit(forms[i].Form, map[string]string{"username": "alice", "password": fmt.Sprintf("parallel-guess-%d", i)}, "approve")
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	got := ev.since(before) // auditLog verified the chain
	count := map[string]int{}
	ips := map[string]bool{}
	for _, e := range got {
		count[string(e.Kind)+"/"+e.Outcome]++
		if e.Kind == store.AuditLogin {
			ips[e.IP] = true
			if e.User != "alice" || e.Client != "rp" || e.Fields["method"] != "password" {
				t.Errorf("login entry %+v", eventOf(e))
			}
		}
	}
	want := map[string]int{"login/failed": 3, "login/refused": n - 3, "user_locked/ok": 1}
	if !maps.Equal(count, want) {
		t.Errorf("entries by kind/outcome %v, want %v", count, want)
	}
	if len(ips) != n {
		t.Errorf("remote addresses %v, want the %d senders", ips, n)
	}
	if u := ev.user("alice"); u.PasswordLockedUntil.IsZero() {
		t.Error("alice is not locked")
	}
}

// TestPINLockAudited: the consent page's third wrong signing PIN locks it:
// one pin_locked entry with the user, client, remote address and door (the
// wrong PINs before it are no login entries), in the log's one chain; no
// PIN is in the log.
func TestPINLockAudited(t *testing.T) {
	ev := eventsEnv(t)
	const ip = "192.0.2.44"
	b := ev.browserFrom(ip)
	s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
	n := len(ev.since(0))
	var pins []string
	for i := range 3 {
		pin := fmt.Sprintf("40%04d", i)
		pins = append(pins, pin)
		s = ev.must(b.Submit(page(t, s).Form, map[string]string{"pin": pin}, "approve"))
	}
	if !ev.user("alice").PINLocked {
		t.Fatal("the PIN is not locked")
	}
	wantEvents(t, "PIN lock", ev.since(n), wantEvent{kind: store.AuditPINLock, user: "alice", target: "user:alice",
		client: "rp", ip: ip, outcome: store.AuditOK,
		fields: map[string]string{"failures": "3", "until": "permanent", "door": passwords.DoorConsentPage}})
	_, raw := ev.auditLog()
	for _, p := range append(pins, alicePIN, alicePassword) {
		if strings.Contains(raw, p) {
			t.Errorf("the audit log contains %q", p)
		}
	}
}

// TestAccountActsAudited: on the account page the owner disables and
// enables a credential — each entry names her as the actor and her remote
// address — and signs out: a logout entry, written with the session's
// removal.
func TestAccountActsAudited(t *testing.T) {
	ev := eventsEnv(t)
	const ip = "2001:db8::7"
	b := ev.browserFrom(ip)
	csrf := ev.accountLogin(b, "alice", alicePassword, "en")
	n := len(ev.since(0))
	post := func(path string, v url.Values) {
		t.Helper()
		if s := ev.accountPost(b, path, v, chromiumSameOrigin()); s.Status != http.StatusSeeOther {
			t.Fatalf("%s: %d %.300s", path, s.Status, oauthtest.Text(s.Body))
		}
	}
	post("/oauth2/account", url.Values{"csrf_token": {csrf}, "credential": {credAlice}, "decision": {"disable"}, "lang": {"en"}})
	post("/oauth2/account", url.Values{"csrf_token": {csrf}, "credential": {credAlice}, "decision": {"enable"}, "lang": {"en"}})
	post("/oauth2/account/logout", url.Values{"csrf_token": {csrf}, "lang": {"en"}})
	got := ev.since(n)
	wantEvents(t, "account page", got,
		wantEvent{kind: store.AuditCredentialDisabled, user: "alice", actor: "user:alice", target: "credential:" + credAlice, ip: ip,
			outcome: store.AuditOK, reason: "by the owner; revoked 0 SADs, 0 codes, 0 pending requests"},
		wantEvent{kind: store.AuditCredentialEnabled, user: "alice", actor: "user:alice", target: "credential:" + credAlice, ip: ip,
			outcome: store.AuditOK, reason: "by the owner"},
		wantEvent{kind: store.AuditLogout, user: "alice", actor: "user:alice", target: "user:alice", ip: ip, outcome: store.AuditOK})
	if len(got) == 3 && got[0].Credential != credAlice {
		t.Errorf("credential_disabled names credential %q", got[0].Credential)
	}
	// Signing out again (the session is gone) ends nothing: no entry.
	n = len(ev.since(0))
	ev.accountPost(b, "/oauth2/account/logout", url.Values{"csrf_token": {csrf}, "lang": {"en"}}, chromiumSameOrigin())
	wantEvents(t, "second logout", ev.since(n))
}

// auditFaultStore fails every audit append while fail is set, as a full
// disk would fail the commit of the transaction that holds it.
type auditFaultStore struct {
	oauth.Store
	fail atomic.Bool
}

func (f *auditFaultStore) Update(ctx context.Context, fn func(oauth.Tx) error) error {
	return f.Store.Update(ctx, func(tx oauth.Tx) error { return fn(auditFaultTx{tx, f}) })
}

func (f *auditFaultStore) Batch(ctx context.Context, fn func(oauth.Tx) error) error {
	return f.Store.Batch(ctx, func(tx oauth.Tx) error { return fn(auditFaultTx{tx, f}) })
}

type auditFaultTx struct {
	oauth.Tx
	f *auditFaultStore
}

func (t auditFaultTx) AppendAudit(e *store.AuditEntry) error {
	if t.f.fail.Load() {
		return fmt.Errorf("%w: audit log: %w", store.ErrUnavailable, syscall.ENOSPC)
	}
	return t.Tx.AppendAudit(e)
}

// TestLoginNotAnsweredWithoutItsEntry: a login attempt's entry is written
// in the transaction that settles the guess, so when the entry cannot be
// written no attempt gets its answer — neither "wrong password" (which
// would tell a guesser something) nor a login: the flow ends
// temporarily_unavailable, and every evaluated guess, the right password's
// too, stays counted as a failure (fail closed).
func TestLoginNotAnsweredWithoutItsEntry(t *testing.T) {
	fs := &auditFaultStore{}
	ev := newEnv(t, func(c *oauth.Config) { fs.Store = c.Store; c.Store = fs })
	fs.fail.Store(true)
	for _, try := range []struct{ user, password string }{
		{"alice", "alice-wrong-guess"}, {"nobody", "nobody-guess"}, {"carol", carolPassword}, {"alice", alicePassword},
	} {
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams())))), try.user, try.password)
		if code, _ := errorOf(t, s); code != oauth.CodeTemporarilyUnavailable {
			t.Errorf("%s/%s without an audit entry: answered %d %v %.200s, want temporarily_unavailable",
				try.user, try.password, s.Status, s.Location, oauthtest.Text(s.Body))
		}
	}
	if u := ev.user("alice"); u.FailedPasswords != 2 {
		t.Errorf("alice's failures %d, want 2: both guesses stay counted", u.FailedPasswords)
	}
}

// TestPasswordEdgesAudited: the checker's other ways to answer, each one
// entry. auth/login (the daemon's middleware has put the remote address in
// the context; authlogin adds its client and door): a TOTP account's right
// password is refused as failed, "the account requires a one-time code".
// A counter left at max_failures by a crash is locked by the next
// attempt's reservation: user_locked in that transaction, the attempt
// refused. A user removed while their guess is hashed: the entry names
// the user as reserved.
func TestPasswordEdgesAudited(t *testing.T) {
	var ph *probeHasher
	db := backends.Bolt(t, bolt.Options{})
	ev := buildEnvWith(t, db, false, envOptions{passwords: func(c *passwords.Config) {
		ph = newProbeHasher(c.Hasher.(*store.Hasher))
		c.Hasher, c.MaxFailures = ph, 3
	}})
	t.Cleanup(ph.releaseAll)
	ctx := passwords.WithOrigin(context.Background(), passwords.Origin{IP: "192.0.2.9"})
	pl := passwordLogin(t, ev, "rp")
	authLogin := func(user, reason string) wantEvent {
		return wantEvent{kind: store.AuditLogin, user: user, target: "user:" + user, client: "rp", ip: "192.0.2.9",
			outcome: store.AuditFailed, reason: reason, fields: map[string]string{"method": "auth_login", "door": passwords.DoorAuthLogin}}
	}

	n := len(ev.since(0))
	pl.Login(ctx, "bob", bobPassword, false)
	wantEvents(t, "auth/login of a TOTP account", ev.since(n), authLogin("bob", "the account requires a one-time code"))

	n = len(ev.since(0))
	ev.updateUser("alice", func(u *store.User) {
		u.FailedPasswords = 3 // as a crash after three reservations leaves it
	})
	pl.Login(ctx, "alice", alicePassword, false)
	until := ev.user("alice").PasswordLockedUntil
	refused := authLogin("alice", "account locked")
	refused.outcome = store.AuditRefused
	wantEvents(t, "a counter at the limit", ev.since(n),
		wantEvent{kind: store.AuditLoginLock, user: "alice", target: "user:alice", client: "rp", ip: "192.0.2.9", outcome: store.AuditOK,
			fields: map[string]string{"failures": "3", "until": until.UTC().Format(time.RFC3339), "door": passwords.DoorAuthLogin}},
		refused)

	n = len(ev.since(0))
	g := ph.hold("dave-guess-while-removed")
	done := make(chan struct{})
	go func() {
		defer close(done)
		pl.Login(ctx, "erin", "dave-guess-while-removed", false)
	}()
	<-g.entered
	ev.update(func(tx store.Tx) error {
		if err := tx.DeleteCredential("cred-erin"); err != nil {
			return err
		}
		return tx.DeleteUser("erin")
	})
	close(g.release)
	<-done
	wantEvents(t, "removed while hashing", ev.since(n), authLogin("erin", "user removed meanwhile"))
}

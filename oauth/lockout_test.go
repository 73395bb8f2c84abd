package oauth_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// probeHasher wraps the real hasher: it counts the evaluations of each
// stored hash and the dummy hashes, can hold the evaluation of a given
// secret until the test releases it, and can hold the evaluations of one
// stored hash until a quorum of them runs at once.
type probeHasher struct {
	inner *store.Hasher

	mu      sync.Mutex
	checks  map[string]int // stored hash → evaluations
	dummies int
	gates   map[string]*gate // secret → gate
	quorum  struct {
		hash    string
		n       int
		reached chan struct{}
		while   func() bool // keeps a reached quorum waiting while true
	}
}

// gate holds the evaluation of one secret: entered is closed when it
// starts, and it runs once release is closed.
type gate struct {
	entered, release chan struct{}
}

var _ passwords.Hasher = (*probeHasher)(nil)

func newProbeHasher(inner *store.Hasher) *probeHasher {
	return &probeHasher{inner: inner, checks: map[string]int{}, gates: map[string]*gate{}}
}

func (h *probeHasher) Check(encoded string, secret []byte) (bool, error) {
	h.mu.Lock()
	h.checks[encoded]++
	g := h.gates[string(secret)]
	var quorum chan struct{}
	var while func() bool
	if q := &h.quorum; q.hash == encoded {
		quorum, while = q.reached, q.while
		if h.checks[encoded] >= q.n && q.n > 0 {
			q.n = 0
			close(q.reached)
		}
	}
	h.mu.Unlock()
	if quorum != nil {
		select {
		case <-quorum:
		case <-time.After(20 * time.Second): // never hang the test
		}
		for deadline := time.Now().Add(20 * time.Second); while != nil && while() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	if g != nil {
		select {
		case <-g.entered:
		default:
			close(g.entered)
		}
		select {
		case <-g.release:
		case <-time.After(20 * time.Second): // never hang the test
		}
	}
	return h.inner.Check(encoded, secret)
}

func (h *probeHasher) Dummy(secret []byte) {
	h.mu.Lock()
	h.dummies++
	h.mu.Unlock()
	h.inner.Dummy(secret)
}

// holdUntil holds the evaluations of the stored hash encoded until n of
// them (counting from now) wait together.
func (h *probeHasher) holdUntil(encoded string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.quorum.hash, h.quorum.n, h.quorum.reached = encoded, h.checks[encoded]+n, make(chan struct{})
}

// holdWhile keeps the quorum of holdUntil waiting, once reached, while
// cond reports true: the guesses stay in flight until the test has seen
// what must happen meanwhile.
func (h *probeHasher) holdWhile(cond func() bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.quorum.while = cond
}

// releaseAll lets every held evaluation run (at the end of a test, so
// that a failed test leaves no request hanging).
func (h *probeHasher) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range h.gates {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	}
	if h.quorum.n > 0 {
		h.quorum.n = 0
		close(h.quorum.reached)
	}
}

// hold installs a gate for secret.
func (h *probeHasher) hold(secret string) *gate {
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	h.mu.Lock()
	h.gates[secret] = g
	h.mu.Unlock()
	return g
}

func (h *probeHasher) evaluations(encoded string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.checks[encoded]
}

func (h *probeHasher) dummyCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dummies
}

// lockoutEnv is an env with MaxFailures 3 whose hasher is probed.
func lockoutEnv(t *testing.T, mods ...func(*passwords.Config)) (*env, *probeHasher) {
	var ph *probeHasher
	ev := buildEnvWith(t, memoryStore(t), false, envOptions{passwords: func(c *passwords.Config) {
		ph = newProbeHasher(c.Hasher.(*store.Hasher))
		c.Hasher, c.MaxFailures, c.MaxConcurrentHashes = ph, 3, 64
		for _, m := range mods {
			m(c)
		}
	}})
	t.Cleanup(ph.releaseAll) // runs before the test server closes
	return ev, ph
}

// consentPage logs alice in to a credential flow in a new browser and
// returns the browser and the consent page (which asks the PIN).
func (ev *env) consentPage() (*oauthtest.Browser, *oauthtest.Step) {
	ev.t.Helper()
	b := ev.browser()
	s := ev.login(b, page(ev.t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
	if !page(ev.t, s).Form.Has("pin") {
		ev.t.Fatalf("no PIN field: %s", oauthtest.Text(s.Body))
	}
	return b, s
}

// answer is one form submission's outcome.
type answer struct {
	s   *oauthtest.Step
	err error
}

// shownForm is a form page one browser was shown and has not submitted.
type shownForm struct {
	b *oauthtest.Browser
	s *oauthtest.Step
}

// openForms shows n form pages, each in its own browser, with open.
func openForms(n int, open func() (*oauthtest.Browser, *oauthtest.Step)) []shownForm {
	out := make([]shownForm, n)
	for i := range out {
		out[i].b, out[i].s = open()
	}
	return out
}

// submit submits the form with fields, approving.
func (f shownForm) submit(fields map[string]string) (*oauthtest.Step, error) {
	return f.b.Submit(f.s.Form, fields, "approve")
}

// burst submits every form at once: each goroutine waits at a closed
// start barrier, then posts its form with its own values.
func burst(n int, submit func(i int) (*oauthtest.Step, error)) []answer {
	out := make([]answer, n)
	storetest.AtOnce(n, func(i int) {
		out[i].s, out[i].err = submit(i)
	})
	return out
}

// async submits a form in the background; wait returns the outcome.
func async(submit func() (*oauthtest.Step, error)) (wait func() (*oauthtest.Step, error)) {
	ch := make(chan answer, 1)
	go func() {
		s, err := submit()
		ch <- answer{s, err}
	}()
	return func() (*oauthtest.Step, error) {
		select {
		case a := <-ch:
			return a.s, a.err
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("no answer in 30s")
		}
	}
}

const pinLockedDesc = "The signing PIN is locked"

// logged reports whether the server logged msg for username (a JSON line
// with both).
func (ev *env) logged(msg, username string) bool {
	return ev.loggedCount(msg, username) > 0
}

// loggedCount counts the log records with msg about username.
func (ev *env) loggedCount(msg, username string) int {
	n := 0
	for _, line := range strings.Split(ev.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg && rec["username"] == username {
			n++
		}
	}
	return n
}

// pinRefusedInFlight is logged for a PIN refused because the guesses left
// are all in flight.
const pinRefusedInFlight = "signing PIN locked: consent refused without checking the PIN"

// deniedWith requires s to end the flow with access_denied and desc.
func deniedWith(t *testing.T, what string, s *oauthtest.Step, desc string) {
	t.Helper()
	if !s.Redirected() {
		t.Errorf("%s: want access_denied %q, got status %d: %.300s", what, desc, s.Status, oauthtest.Text(s.Body))
		return
	}
	if q := s.Query(); q.Get("code") != "" || q.Get("error") != "access_denied" || q.Get("error_description") != desc {
		t.Errorf("%s: want access_denied %q, got %v", what, desc, q)
	}
}

// TestPINLockoutUnderConcurrency fires many wrong PINs at once, each on
// its own pending request: exactly MaxFailures are evaluated, the PIN is
// locked, and the right PIN afterwards gets no code.
func TestPINLockoutUnderConcurrency(t *testing.T) {
	const n = 24
	ev, ph := lockoutEnv(t)
	flows := openForms(n+1, ev.consentPage)
	pinHash := ev.user("alice").PINHash
	// The evaluations wait for each other, so that all three are in
	// flight together (the unfixed server lets every guess through), and
	// stay in flight until every other wrong PIN has met them (and not a
	// lock already written).
	ph.holdUntil(pinHash, 3)
	ph.holdWhile(func() bool { return ev.loggedCount(pinRefusedInFlight, "alice") < n-3 })

	answers := burst(n, func(i int) (*oauthtest.Step, error) {
		return flows[i].submit(map[string]string{"pin": fmt.Sprintf("wrong-pin-%02d", i)})
	})

	if got := ph.evaluations(pinHash); got != 3 {
		t.Errorf("%d wrong PINs at once: %d evaluated, want exactly max_failures = 3", n, got)
	}
	u := ev.user("alice")
	if u.FailedPINs != 3 || !u.PINLocked {
		t.Errorf("after the burst: %d failures, locked %v; want 3, true", u.FailedPINs, u.PINLocked)
	}
	for i, a := range answers {
		if a.err != nil {
			t.Fatal(a.err)
		}
		deniedWith(t, fmt.Sprintf("wrong PIN %d", i), a.s, pinLockedDesc)
	}

	// The right PIN, on a consent page shown before the lock: no code, no
	// evaluation.
	s := ev.must(flows[n].submit(map[string]string{"pin": alicePIN}))
	deniedWith(t, "right PIN after the lock", s, pinLockedDesc)
	if got := ph.evaluations(pinHash); got != 3 {
		t.Errorf("the right PIN after the lock was evaluated (%d evaluations)", got)
	}

	logs := ev.logs.String()
	if !ev.logged("signing PIN locked after failed attempts", "alice") ||
		!ev.logged(pinRefusedInFlight, "alice") {
		t.Errorf("the log does not show the lock and the refusals")
	}
	// The PIN as a value of its own: its digits inside a longer number (a
	// timestamp's nanoseconds, a duration) are not it.
	if i := strings.Index(logs, "wrong-pin-"); i >= 0 {
		t.Errorf("the log contains a PIN: %.80s", logs[max(0, i-40):])
	}
	if loc := regexp.MustCompile(`(^|[^0-9])` + alicePIN + `([^0-9]|$)`).FindStringIndex(logs); loc != nil {
		t.Errorf("the log contains the PIN: %.80s", logs[max(0, loc[0]-40):])
	}
}

// TestLoginLockoutUnderConcurrency fires many wrong passwords at once:
// exactly MaxFailures are evaluated (the rest cost a dummy hash), the
// account is locked, and the right password afterwards opens no session.
func TestLoginLockoutUnderConcurrency(t *testing.T) {
	const n = 24
	ev, ph := lockoutEnv(t)
	flows := openForms(n+1, func() (*oauthtest.Browser, *oauthtest.Step) {
		b := ev.browser()
		return b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
	})
	pwHash := ev.user("dave").PasswordHash
	ph.holdUntil(pwHash, 3)

	answers := burst(n, func(i int) (*oauthtest.Step, error) {
		return flows[i].submit(map[string]string{"username": "dave", "password": fmt.Sprintf("wrong-password-%02d", i)})
	})

	if got := ph.evaluations(pwHash); got != 3 {
		t.Errorf("%d wrong passwords at once: %d evaluated, want exactly max_failures = 3", n, got)
	}
	if got := ph.dummyCount(); got != n-3 {
		t.Errorf("%d dummy hashes, want %d (the refused guesses cost one each)", got, n-3)
	}
	u := ev.user("dave")
	if u.FailedPasswords != 3 || !ev.timedLock(u, time.Minute) {
		t.Errorf("after the burst: %d failures, locked until %v; want 3, a minute from now", u.FailedPasswords, u.PasswordLockedUntil)
	}
	for i, a := range answers {
		if a.err != nil {
			t.Fatal(a.err)
		}
		if a.s.Redirected() || !strings.Contains(a.s.Body, genericLoginError) {
			t.Errorf("wrong password %d: want the generic login error, got %d %v", i, a.s.Status, a.s.Location)
		}
	}

	// The right password: the same generic answer, no session, no code.
	s := ev.must(flows[n].submit(map[string]string{"username": "dave", "password": davePassword}))
	if s.Redirected() || !strings.Contains(s.Body, genericLoginError) {
		t.Errorf("right password after the lock: %d %v %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
	}
	if ck := s.Header.Values("Set-Cookie"); len(ck) != 0 {
		t.Errorf("right password after the lock sets a cookie: %v", ck)
	}
	if got := ph.evaluations(pwHash); got != 3 {
		t.Errorf("the right password after the lock was evaluated (%d evaluations)", got)
	}
	logs := ev.logs.String()
	if !ev.logged("account locked after failed logins", "dave") ||
		!ev.logged("account locked: login refused without checking the password", "dave") {
		t.Errorf("the log does not show the lock and the refusals")
	}
	if strings.Contains(logs, "wrong-password-") || strings.Contains(logs, davePassword) {
		t.Error("the log contains a password")
	}
}

// TestPINReservationInterleavings pins down the documented interleavings of
// a right PIN and wrong PINs in flight together (MaxFailures 3).
func TestPINReservationInterleavings(t *testing.T) {
	t.Run("wrong_pins_settling_first_lock_out_the_right_pin_in_flight", func(t *testing.T) {
		ev, ph := lockoutEnv(t)
		pinHash := ev.user("alice").PINHash
		bRight, sRight := ev.consentPage()
		b1, s1 := ev.consentPage()
		b2, s2 := ev.consentPage()
		b3, s3 := ev.consentPage()
		right, w1, w2 := ph.hold(alicePIN), ph.hold("wrong-pin-1"), ph.hold("wrong-pin-2")

		waitRight := async(func() (*oauthtest.Step, error) {
			return bRight.Submit(sRight.Form, map[string]string{"pin": alicePIN}, "approve")
		})
		<-right.entered
		wait1 := async(func() (*oauthtest.Step, error) {
			return b1.Submit(s1.Form, map[string]string{"pin": "wrong-pin-1"}, "approve")
		})
		wait2 := async(func() (*oauthtest.Step, error) {
			return b2.Submit(s2.Form, map[string]string{"pin": "wrong-pin-2"}, "approve")
		})
		<-w1.entered
		<-w2.entered
		if u := ev.user("alice"); u.FailedPINs != 3 || u.PINLocked {
			t.Errorf("three guesses in flight: %d counted, locked %v; want 3, false", u.FailedPINs, u.PINLocked)
		}
		// Every guess left is in flight: a fourth is locked, unevaluated.
		deniedWith(t, "fourth guess", ev.must(b3.Submit(s3.Form, map[string]string{"pin": "wrong-pin-3"}, "approve")), pinLockedDesc)
		if got := ph.evaluations(pinHash); got != 3 {
			t.Errorf("%d evaluations, want 3", got)
		}
		// The wrong ones settle: the right one in flight still counts, so
		// they lock.
		close(w1.release)
		close(w2.release)
		for _, wait := range []func() (*oauthtest.Step, error){wait1, wait2} {
			deniedWith(t, "wrong PIN", ev.must(wait()), pinLockedDesc)
		}
		if u := ev.user("alice"); !u.PINLocked {
			t.Error("not locked after the wrong guesses settled")
		}
		// The right PIN settles last: it matched, but the code is refused.
		close(right.release)
		deniedWith(t, "right PIN settling after the lock", ev.must(waitRight()), pinLockedDesc)
		if !ev.logged("signing PIN locked: no code issued", "alice") {
			t.Errorf("the refusal at issue is not logged")
		}
	})

	t.Run("right_pin_settling_first_leaves_the_wrong_one_in_flight_counted", func(t *testing.T) {
		ev, ph := lockoutEnv(t)
		bRight, sRight := ev.consentPage()
		bWrong, sWrong := ev.consentPage()
		right, wrong := ph.hold(alicePIN), ph.hold("wrong-pin-1")

		waitRight := async(func() (*oauthtest.Step, error) {
			return bRight.Submit(sRight.Form, map[string]string{"pin": alicePIN}, "approve")
		})
		<-right.entered
		waitWrong := async(func() (*oauthtest.Step, error) {
			return bWrong.Submit(sWrong.Form, map[string]string{"pin": "wrong-pin-1"}, "approve")
		})
		<-wrong.entered
		close(right.release)
		ev.codeOf(ev.must(waitRight()), rpRedirect, "state-123")
		if u := ev.user("alice"); u.FailedPINs != 1 || u.PINLocked {
			t.Errorf("after the right PIN settled: %d counted, locked %v; want 1 (the guess in flight), false", u.FailedPINs, u.PINLocked)
		}
		close(wrong.release)
		s := ev.must(waitWrong())
		if !page(t, s).Form.Has("pin") || !strings.Contains(s.Body, "De PIN is onjuist") {
			t.Fatalf("wrong PIN: %s", oauthtest.Text(s.Body))
		}
		if u := ev.user("alice"); u.FailedPINs != 1 || u.PINLocked {
			t.Errorf("after the wrong PIN settled: %d counted, locked %v; want 1, false", u.FailedPINs, u.PINLocked)
		}
		// Two more wrong PINs lock: three in a row since the success.
		s = page(t, ev.approve(bWrong, s, "wrong-pin-2"))
		deniedWith(t, "third wrong PIN", ev.approve(bWrong, s, "wrong-pin-3"), pinLockedDesc)
		if u := ev.user("alice"); u.FailedPINs != 3 || !u.PINLocked {
			t.Errorf("after three wrong PINs: %d counted, locked %v", u.FailedPINs, u.PINLocked)
		}
	})
}

// daveWhileHashing submits dave's right password on the login page and,
// while it is hashed, runs meanwhile (a lock, a reset); it returns the
// env, the browser, the login page and the answer.
func daveWhileHashing(t *testing.T, meanwhile func(ev *env)) (*env, *oauthtest.Browser, *oauthtest.Step, *oauthtest.Step) {
	t.Helper()
	ev, ph := lockoutEnv(t)
	b := ev.browser()
	s := page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
	g := ph.hold(davePassword)
	wait := async(func() (*oauthtest.Step, error) {
		return b.Submit(s.Form, map[string]string{"username": "dave", "password": davePassword}, "approve")
	})
	<-g.entered
	meanwhile(ev)
	close(g.release)
	return ev, b, s, ev.must(wait())
}

// aliceWhileHashingPIN approves alice's consent page with her right PIN
// and, while it is hashed, runs meanwhile; it returns the env, the
// browser, the consent page and the answer.
func aliceWhileHashingPIN(t *testing.T, meanwhile func(ev *env)) (*env, *oauthtest.Browser, *oauthtest.Step, *oauthtest.Step) {
	t.Helper()
	ev, ph := lockoutEnv(t)
	b, s := ev.consentPage()
	g := ph.hold(alicePIN)
	wait := async(func() (*oauthtest.Step, error) {
		return b.Submit(s.Form, map[string]string{"pin": alicePIN}, "approve")
	})
	<-g.entered
	meanwhile(ev)
	close(g.release)
	return ev, b, s, ev.must(wait())
}

// TestLockedWhileHashing locks the secret (as a concurrent request or an
// admin would) while the right one is being hashed: the step's final
// transaction re-checks and refuses.
func TestLockedWhileHashing(t *testing.T) {
	t.Run("pin", func(t *testing.T) {
		ev, b, s, got := aliceWhileHashingPIN(t, func(ev *env) {
			ev.updateUser("alice", func(u *store.User) { u.PINLocked = true })
		})
		deniedWith(t, "right PIN locked while hashing", got, pinLockedDesc)
		// The flow is over: the consent page cannot be answered again.
		if s2 := ev.must(b.Submit(s.Form, map[string]string{"pin": alicePIN}, "approve")); s2.Redirected() || s2.Status != http.StatusBadRequest {
			t.Errorf("answering the page again: %d %v", s2.Status, s2.Location)
		}
		if !ev.logged("signing PIN locked: no code issued", "alice") {
			t.Errorf("the refusal is not logged")
		}
	})
	// daveLockedWhileHashing is daveWhileHashing changing his record by
	// lock.
	daveLockedWhileHashing := func(t *testing.T, lock func(u *store.User, now time.Time)) (*env, *oauthtest.Browser, *oauthtest.Step, *oauthtest.Step) {
		t.Helper()
		return daveWhileHashing(t, func(ev *env) { ev.updateUser("dave", func(u *store.User) { lock(u, ev.clock.Now()) }) })
	}
	// A password locked while the right one is hashed: no success, and
	// the answer of a wrong password (settleStep).
	for _, tc := range []struct {
		name string
		lock func(u *store.User, now time.Time)
	}{
		{"password_locked", func(u *store.User, _ time.Time) { u.PasswordLocked = true }},
		{"password_locked_for_a_while", func(u *store.User, now time.Time) { u.PasswordLockedUntil = now.Add(time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, _, _, got := daveLockedWhileHashing(t, tc.lock)
			if got.Redirected() || !strings.Contains(got.Body, genericLoginError) {
				t.Errorf("right password locked while hashing: want the generic login error, got %d %v", got.Status, got.Location)
			}
			if ck := got.Header.Values("Set-Cookie"); len(ck) != 0 {
				t.Errorf("a session cookie was set: %v", ck)
			}
			if u := ev.user("dave"); u.FailedPasswords != 1 {
				t.Errorf("%d failures counted, want 1: a right password refused by a lock is no success", u.FailedPasswords)
			}
			if !ev.logged("login failed; the account is locked", "dave") {
				t.Errorf("the refusal is not logged")
			}
		})
	}
	// An account disabled while the right password is hashed: the step is
	// refused and the flow is over.
	t.Run("account_disabled", func(t *testing.T) {
		ev, b, s, got := daveLockedWhileHashing(t, func(u *store.User, _ time.Time) { u.Status = store.UserDisabled })
		deniedWith(t, "right password locked while hashing", got, "The account is locked or disabled")
		if ck := got.Header.Values("Set-Cookie"); len(ck) != 0 {
			t.Errorf("a session cookie was set: %v", ck)
		}
		if s2 := ev.must(b.Submit(s.Form, map[string]string{"username": "dave", "password": davePassword}, "approve")); s2.Redirected() || s2.Status != http.StatusBadRequest {
			t.Errorf("answering the login page again: %d %v", s2.Status, s2.Location)
		}
		if !ev.logged("account locked or disabled: step refused", "dave") {
			t.Errorf("the refusal is not logged")
		}
	})
}

// TestPINLockedBeforeRedemption locks the PIN after a PIN-verified code
// was issued: the token endpoint refuses it (no SAD) and uses it up. A
// code whose consent asked no PIN is not affected.
func TestPINLockedBeforeRedemption(t *testing.T) {
	ev := newEnv(t)
	code := ev.credentialCode(credentialParams(credAlice))
	svc, _ := ev.serviceCode(serviceParams())
	setLock := func(locked bool) {
		ev.updateUser("alice", func(u *store.User) {
			u.PINLocked = locked
		})
	}
	setLock(true)
	resp, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
	if resp.StatusCode != http.StatusBadRequest || body["error"] != "invalid_grant" || body["error_description"] != pinLockedDesc {
		t.Errorf("PIN-verified code with the PIN locked: %d %v", resp.StatusCode, body)
	}
	if _, ok := body["access_token"]; ok {
		t.Error("a SAD was issued with the PIN locked")
	}
	if !ev.logged("signing PIN locked: code refused", "alice") {
		t.Errorf("the refusal is not logged")
	}
	// A service code (no PIN asked) still redeems.
	if resp, body := ev.tokenRequest(tokenForm(svc), "rp", rpSecret); resp.StatusCode != http.StatusOK {
		t.Errorf("service code with the PIN locked: %d %v", resp.StatusCode, body)
	}
	// Unlocking does not revive the refused code.
	setLock(false)
	if resp, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret); resp.StatusCode != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("refused code after unlock: %d %v", resp.StatusCode, body)
	}
}

// TestReservationFaults checks reservations that no evaluation settles: a
// guess that found no hashing slot returns its reservation, and a counter
// left at MaxFailures without a lock (the process died between a
// reservation and its settling) is locked by the next guess, unevaluated.
func TestReservationFaults(t *testing.T) {
	t.Run("busy_guess_returns_its_reservation", func(t *testing.T) {
		ev, ph := lockoutEnv(t, func(c *passwords.Config) { c.MaxConcurrentHashes, c.HashWait = 1, 50*time.Millisecond })
		bHeld, sHeld := ev.consentPage()
		b, s := ev.consentPage()
		held := ph.hold("wrong-pin-1")
		wait := async(func() (*oauthtest.Step, error) {
			return bHeld.Submit(sHeld.Form, map[string]string{"pin": "wrong-pin-1"}, "approve")
		})
		<-held.entered // the only hashing slot is taken
		s = ev.approve(b, s, "wrong-pin-2")
		if !page(t, s).Form.Has("pin") || !strings.Contains(s.Body, "erg druk") {
			t.Fatalf("no slot: want the busy consent page, got %s", oauthtest.Text(s.Body))
		}
		if u := ev.user("alice"); u.FailedPINs != 1 {
			t.Errorf("after a busy answer: %d failures counted, want 1 (the guess in flight)", u.FailedPINs)
		}
		close(held.release)
		page(t, ev.must(wait()))
		// The busy page can be answered again, with the right PIN.
		ev.codeOf(ev.approve(b, s, alicePIN), rpRedirect, "state-123")
		if u := ev.user("alice"); u.FailedPINs != 0 || u.PINLocked {
			t.Errorf("after the right PIN: %d failures, locked %v", u.FailedPINs, u.PINLocked)
		}
	})
	t.Run("pin_counter_at_the_limit_is_locked_unevaluated", func(t *testing.T) {
		ev, ph := lockoutEnv(t)
		b, s := ev.consentPage()
		ev.updateUser("alice", func(u *store.User) {
			u.FailedPINs = 3
		})
		deniedWith(t, "right PIN with 3 failures left over", ev.approve(b, s, alicePIN), pinLockedDesc)
		u := ev.user("alice")
		if !u.PINLocked || u.FailedPINs != 3 {
			t.Errorf("left-over failures: locked %v, %d failures; want true, 3", u.PINLocked, u.FailedPINs)
		}
		if n := ph.evaluations(u.PINHash); n != 0 {
			t.Errorf("%d PIN evaluations, want 0", n)
		}
	})
	t.Run("password_counter_at_the_limit_is_locked_unevaluated", func(t *testing.T) {
		ev, ph := lockoutEnv(t)
		ev.updateUser("dave", func(u *store.User) {
			u.FailedPasswords = 3
		})
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams())))), "dave", davePassword)
		if s.Redirected() || !strings.Contains(s.Body, genericLoginError) || len(s.Header.Values("Set-Cookie")) != 0 {
			t.Errorf("right password with 3 failures left over: %d %v %v", s.Status, s.Location, s.Header.Values("Set-Cookie"))
		}
		u := ev.user("dave")
		if !ev.timedLock(u, time.Minute) || u.FailedPasswords != 3 {
			t.Errorf("left-over failures: locked until %v, %d failures; want a minute from now, 3", u.PasswordLockedUntil, u.FailedPasswords)
		}
		if n, d := ph.evaluations(u.PasswordHash), ph.dummyCount(); n != 0 || d != 1 {
			t.Errorf("%d password evaluations and %d dummy hashes, want 0 and 1", n, d)
		}
	})
}

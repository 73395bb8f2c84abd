package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store/storetest"
)

// faultStore injects the failures of a full or failing disk: with writes
// set, every Update and Batch runs its function and then fails to commit
// (store.ErrUnavailable wrapping ENOSPC, nothing committed), as bbolt's
// commit does; with reads set, View fails too.
type faultStore struct {
	oauth.Store
	writes, reads atomic.Bool
}

func (f *faultStore) Update(ctx context.Context, fn func(oauth.Tx) error) error {
	if !f.writes.Load() {
		return f.Store.Update(ctx, fn)
	}
	return f.Store.Update(ctx, storetest.ThenFail(fn, storetest.ErrDiskFull))
}

// Batch fails as Update does: the token endpoint redeems codes in a Batch.
func (f *faultStore) Batch(ctx context.Context, fn func(oauth.Tx) error) error {
	if !f.writes.Load() {
		return f.Store.Batch(ctx, fn)
	}
	return f.Store.Batch(ctx, storetest.ThenFail(fn, storetest.ErrDiskFull))
}

func (f *faultStore) View(ctx context.Context, fn func(oauth.Tx) error) error {
	if f.reads.Load() {
		return storetest.ErrDiskFailed
	}
	return f.Store.View(ctx, fn)
}

// TestStoreUnavailable: when the store cannot write, every OAuth answer is
// temporarily_unavailable in its protocol's form — a redirect once the
// redirect URI is known (RFC 6749 §4.1.2.1), JSON 503 with Retry-After at
// the token endpoint (§5.2), a 503 page before that — and nothing is half
// done: a code that could not be redeemed is still good, a login that
// could not be recorded does not log in.
func TestStoreUnavailable(t *testing.T) {
	fs := &faultStore{}
	ev := newEnv(t, func(c *oauth.Config) { fs.Store = c.Store; c.Store = fs })
	t.Cleanup(func() { fs.writes.Store(false); fs.reads.Store(false) })

	wantRedirect := func(t *testing.T, s *oauthtest.Step) {
		t.Helper()
		code, desc := errorOf(t, s)
		if code != oauth.CodeTemporarilyUnavailable || desc == "" {
			t.Errorf("redirect error %q %q, want temporarily_unavailable", code, desc)
		}
		if q := s.Query(); q.Get("state") != "state-123" || q.Get("iss") != ev.srv.Issuer() {
			t.Errorf("redirect %v lacks state or iss", q)
		}
	}

	t.Run("authorize redirects temporarily_unavailable", func(t *testing.T) {
		fs.writes.Store(true)
		defer fs.writes.Store(false)
		wantRedirect(t, ev.must(ev.browser().Get(ev.authorizeURL(serviceParams()))))
	})

	t.Run("token answers 503 and consumes nothing", func(t *testing.T) {
		code, _ := ev.serviceCode(serviceParams())
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirect}}
		fs.writes.Store(true)
		resp, body := ev.tokenRequest(form, "rp", rpSecret)
		fs.writes.Store(false)
		if resp.StatusCode != http.StatusServiceUnavailable || body["error"] != oauth.CodeTemporarilyUnavailable {
			t.Fatalf("token on a full disk: %d %v", resp.StatusCode, body)
		}
		for h, want := range map[string]string{"Retry-After": oauth.RetryAfter, "Cache-Control": "no-store"} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("%s = %q, want %q", h, got, want)
			}
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q", ct)
		}
		// The code was not consumed: it redeems once the disk is back.
		resp, body = ev.tokenRequest(form, "rp", rpSecret)
		if resp.StatusCode != http.StatusOK || body["access_token"] == nil {
			t.Fatalf("the code after the outage: %d %v", resp.StatusCode, body)
		}
	})

	for _, password := range []string{alicePassword, "a wrong password"} {
		t.Run("login that cannot be recorded is refused/"+map[bool]string{true: "right password", false: "wrong password"}[password == alicePassword], func(t *testing.T) {
			b := ev.browser()
			s := ev.must(b.Get(ev.authorizeURL(serviceParams())))
			fs.writes.Store(true)
			defer fs.writes.Store(false)
			s = ev.login(b, s, "alice", password)
			wantRedirect(t, s)
			if u := ev.user("alice"); u.FailedPasswords != 0 {
				t.Errorf("a failure was half recorded: %d", u.FailedPasswords)
			}
		})
	}

	t.Run("error page when the store cannot be read", func(t *testing.T) {
		fs.reads.Store(true)
		defer fs.reads.Store(false)
		s := ev.must(ev.browser().Get(ev.authorizeURL(serviceParams())))
		if s.Redirected() || s.Status != http.StatusServiceUnavailable {
			t.Fatalf("authorize with an unreadable store: %d %v", s.Status, s.Location)
		}
		if got := s.Header.Get("Retry-After"); got != oauth.RetryAfter {
			t.Errorf("Retry-After %q", got)
		}
		if !strings.Contains(s.Body, "tijdelijk niet beschikbaar") {
			t.Errorf("error page does not say the service is temporarily unavailable: %.400s", oauthtest.Text(s.Body))
		}
	})
}

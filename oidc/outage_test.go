package oidc_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store/storetest"
)

// TestTokenEndpointHSMOutage: while the HSM cannot sign the ID token the
// token endpoint answers 503 temporarily_unavailable with Retry-After
// (never 500). Once the outage is known, a code is refused before it is
// redeemed, so the same code works after the HSM is back. The real token
// going away under the daemon is cmd/signd's TestHSMOutageThroughDaemon.
func TestTokenEndpointHSMOutage(t *testing.T) {
	ev := newFlowEnv(t)
	t.Cleanup(token.Clear)
	if tr := ev.redeem("rp", ev.code("rp", "openid")); tr.Status != http.StatusOK || tr.Body["id_token"] == nil {
		t.Fatalf("before the outage: %d %v", tr.Status, tr.Body)
	}

	want503 := func(what string, tr *tokenResponse) {
		t.Helper()
		if tr.Status != http.StatusServiceUnavailable || tr.Body["error"] != "temporarily_unavailable" ||
			tr.Body["error_description"] != "The ID token signer is temporarily unavailable, try again later" {
			t.Errorf("%s: %d %v", what, tr.Status, tr.Body)
		}
		if tr.Header.Get("Retry-After") != "5" || tr.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", what, tr.Header)
		}
	}
	token.SetGone(true)
	// The first redemption finds the outage while signing: its code is
	// spent, its access token revoked.
	want503("redeem as the HSM fails", ev.redeem("rp", ev.code("rp", "openid")))
	if token.Available() {
		t.Fatal("the ID-token signer's failure did not mark the token unavailable")
	}
	// From now on codes are refused before they are redeemed.
	kept := ev.code("rp", "openid")
	signs := token.Calls(softtoken.OpSignDigest)
	want503("redeem during the outage", ev.redeem("rp", kept))
	if n := token.Calls(softtoken.OpSignDigest) - signs; n != 0 {
		t.Errorf("%d signatures asked of a token known to be unavailable", n)
	}

	token.SetGone(false) // the token is back (the real one reconnects)
	if !token.Available() {
		t.Fatal("token not back")
	}
	tr := ev.redeem("rp", kept)
	if tr.Status != http.StatusOK || tr.Body["id_token"] == nil {
		t.Fatalf("the code presented during the outage, after it: %d %v", tr.Status, tr.Body)
	}
	ev.idToken(tr, "rp") // verifies against the JWKS
}

// failingCommits is the authorization server's store whose Batch commits
// fail while fail is set (the disk is full): the function runs, then
// everything it wrote is rolled back.
type failingCommits struct {
	oauth.Store
	fail atomic.Bool
}

func (f *failingCommits) Batch(ctx context.Context, fn func(oauth.Tx) error) error {
	if !f.fail.Load() {
		return f.Store.Batch(ctx, fn)
	}
	return f.Store.Batch(ctx, storetest.ThenFail(fn, storetest.ErrDiskFull))
}

// TestTokenCommitFailure: the ID token is signed while the redemption
// commits; when the commit fails, the answer is 503 and carries neither the
// ID token nor the access token, and the code is still good.
func TestTokenCommitFailure(t *testing.T) {
	fc := &failingCommits{}
	f := newFixture(t)
	f.wrapOAuth = func(s oauth.Store) oauth.Store { fc.Store = s; return fc }
	ev := newFlowEnvWith(t, f)
	code := ev.code("rp", "openid")
	fc.fail.Store(true)
	tr := ev.redeem("rp", code)
	if tr.Status != http.StatusServiceUnavailable || tr.Body["error"] != "temporarily_unavailable" {
		t.Errorf("redeem while commits fail: %d %v", tr.Status, tr.Body)
	}
	if tr.Body["id_token"] != nil || tr.Body["access_token"] != nil {
		t.Errorf("a token left without its commit: %v", tr.Body)
	}
	fc.fail.Store(false)
	tr = ev.redeem("rp", code)
	if tr.Status != http.StatusOK || tr.Body["id_token"] == nil {
		t.Fatalf("the code after the failed commit: %d %v", tr.Status, tr.Body)
	}
	ev.idToken(tr, "rp") // verifies against the JWKS
}

package oidc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// unreadableStore fails every transaction as a store whose disk failed.
type unreadableStore struct{ store.Store }

func (unreadableStore) View(context.Context, func(store.Tx) error) error {
	return storetest.ErrDiskFailed
}

func (unreadableStore) Update(context.Context, func(store.Tx) error) error {
	return storetest.ErrDiskFull
}

// TestUserinfoStoreUnavailable: a store that cannot serve is a 503
// temporarily_unavailable with Retry-After, not a 500.
func TestUserinfoStoreUnavailable(t *testing.T) {
	f := newFixture(t)
	g := newFixtureWith(t, unreadableStore{f.db}, f.salt, f.clock)
	rec := g.do(http.MethodGet, "/userinfo", "", "", http.Header{"Authorization": {"Bearer some-access-token"}})
	var body map[string]string
	if rec.Code != http.StatusServiceUnavailable || json.Unmarshal(rec.Body.Bytes(), &body) != nil ||
		body["error"] != oauth.CodeTemporarilyUnavailable {
		t.Fatalf("userinfo with the store down: %d %s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Retry-After"); got != oauth.RetryAfter {
		t.Errorf("Retry-After %q, want %q", got, oauth.RetryAfter)
	}
}

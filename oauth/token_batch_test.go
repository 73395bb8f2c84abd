package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// retryStore runs every Batch function twice, as a group commit does when
// the shared transaction fails: first in a transaction that alter may
// change beforehand and that is then rolled back, then for real.
type retryStore struct {
	oauth.Store
	alter func(tx oauth.Tx) error // nil: the first run sees what the second sees
}

var errSharedFailed = errors.New("the shared transaction failed")

func (r *retryStore) Batch(ctx context.Context, fn func(oauth.Tx) error) error {
	err := r.Store.Update(ctx, func(tx oauth.Tx) error {
		if r.alter != nil {
			if err := r.alter(tx); err != nil {
				return err
			}
		}
		_ = fn(tx)
		return errSharedFailed
	})
	if !errors.Is(err, errSharedFailed) {
		return err
	}
	return r.Store.Batch(ctx, fn)
}

// TestRedemptionRunTwice: a redemption whose transaction function runs
// twice answers what the committed run did, whatever the rolled-back run
// saw: one token, stored, its code spent; a second redemption is
// invalid_grant and revokes it.
func TestRedemptionRunTwice(t *testing.T) {
	tests := []struct {
		name  string
		alter func(code []byte, now time.Time) func(tx oauth.Tx) error
	}{
		{name: "first_run_saw_the_same", alter: func([]byte, time.Time) func(oauth.Tx) error { return nil }},
		{name: "first_run_saw_the_code_used", alter: func(code []byte, now time.Time) func(oauth.Tx) error {
			return func(tx oauth.Tx) error { return tx.RedeemCode(code, now, now.Add(time.Hour)) }
		}},
		{name: "first_run_saw_no_code", alter: func(_ []byte, now time.Time) func(oauth.Tx) error {
			return func(tx oauth.Tx) error { _, err := tx.DeleteExpiredCodes(now.Add(24 * time.Hour)); return err }
		}},
		{name: "first_run_saw_the_user_locked", alter: func(_ []byte, _ time.Time) func(oauth.Tx) error {
			return func(tx oauth.Tx) error {
				return storetest.EditUser(tx, "alice", func(u *store.User) { u.PasswordLocked = true })
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &retryStore{}
			ev := newEnv(t, func(c *oauth.Config) { rs.Store = c.Store; c.Store = rs })
			code, _ := ev.serviceCode(serviceParams())
			rs.alter = tt.alter(store.Fingerprint(code), ev.clock.Now())
			resp, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
			value, _ := body["access_token"].(string)
			if resp.StatusCode != http.StatusOK || value == "" {
				t.Fatalf("redemption: %d %v, want 200 with a token", resp.StatusCode, body)
			}
			ev.update(func(tx store.Tx) error {
				if _, err := tx.Token(store.Fingerprint(value)); err != nil {
					t.Errorf("the token answered is not stored: %v", err)
				}
				if ac, err := tx.Code(store.Fingerprint(code)); err != nil || ac.RedeemedAt.IsZero() {
					t.Errorf("the code is not spent: %v", err)
				}
				return nil
			})
			rs.alter = nil
			if resp, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret); resp.StatusCode != http.StatusBadRequest || body["error"] != "invalid_grant" {
				t.Fatalf("second redemption: %d %v, want 400 invalid_grant", resp.StatusCode, body)
			}
			ev.update(func(tx store.Tx) error {
				if _, err := tx.Token(store.Fingerprint(value)); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("the first token survived the code's reuse: %v", err)
				}
				return nil
			})
		})
	}
}

// TestGroupCommittedRedemptions: concurrent redemptions over bbolt share
// commits; every code, valid or not, gets its own answer: each valid code
// one stored token, each reused or unknown code invalid_grant.
func TestGroupCommittedRedemptions(t *testing.T) {
	db := backends.Bolt(t, bolt.Options{})
	ev := buildEnv(t, db, false)
	const n = 12
	codes := make([]string, n)
	for i := range codes {
		codes[i], _ = ev.serviceCode(serviceParams())
	}
	type result struct {
		status int
		token  string
		errc   any
	}
	// Every valid code twice, plus unknown codes, all at once.
	forms := make([]string, 0, 2*n+n/2)
	forms = append(forms, codes...)
	forms = append(forms, codes...)
	for i := range n / 2 {
		forms = append(forms, codes[i]+"-unknown")
	}
	results := make([]result, len(forms))
	storetest.AtOnce(len(forms), func(i int) {
		resp, body := ev.tokenRequest(tokenForm(forms[i]), "rp", rpSecret)
		tok, _ := body["access_token"].(string)
		results[i] = result{resp.StatusCode, tok, body["error"]}
	})
	for i := range n {
		a, b := results[i], results[n+i]
		if a.status == http.StatusOK == (b.status == http.StatusOK) {
			t.Errorf("code %d: statuses %d and %d, want one 200 and one 400", i, a.status, b.status)
		}
		for _, r := range []result{a, b} {
			if r.status != http.StatusOK && r.errc != "invalid_grant" {
				t.Errorf("code %d: %d %v, want invalid_grant", i, r.status, r.errc)
			}
		}
	}
	for _, r := range results[2*n:] {
		if r.status != http.StatusBadRequest || r.errc != "invalid_grant" {
			t.Errorf("unknown code: %d %v, want 400 invalid_grant", r.status, r.errc)
		}
	}
	// The reuse revoked what the first redemption issued.
	ev.update(func(tx store.Tx) error {
		for _, r := range results[:2*n] {
			if r.token == "" {
				continue
			}
			if _, err := tx.Token(store.Fingerprint(r.token)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a token of a reused code survived: %v", err)
			}
		}
		return nil
	})
}

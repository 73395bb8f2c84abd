package storetest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Tokens and SAD.

func newToken(value string, kind store.TokenKind, code string, exp time.Time) *store.Token {
	t := &store.Token{
		Hash: store.Fingerprint(value), Kind: kind, ClientID: "rp", Username: "alice",
		Scopes: []string{"service"}, ExpiresAt: exp,
		AuthTime: exp.Add(-2 * time.Hour), RequestedAt: exp.Add(-3 * time.Hour),
	}
	if code != "" {
		t.CodeHash = store.Fingerprint(code)
	}
	if kind == store.TokenAccess {
		t.Consented = store.ConsentRecord{"email": bytes.Repeat([]byte{3}, 32)}
	}
	if kind == store.TokenSAD {
		t.Scopes = []string{"credential"}
		t.CredentialID = "cred-1"
		t.Hashes = [][]byte{bytes.Repeat([]byte{7}, 32)}
	}
	return t
}

func testTokens(t *testing.T, s store.Store) {
	exp := time.Now().Add(time.Hour).UTC().Round(0)
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateToken(newToken("at-1", store.TokenAccess, "code-1", exp)); err != nil {
			return err
		}
		return tx.CreateToken(newToken("sad-1", store.TokenSAD, "code-2", exp))
	})
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Token(store.Fingerprint("sad-1"))
		if err != nil {
			return err
		}
		want := newToken("sad-1", store.TokenSAD, "code-2", exp)
		if got.Kind != want.Kind || got.CredentialID != "cred-1" || len(got.Hashes) != 1 ||
			!bytes.Equal(got.Hashes[0], want.Hashes[0]) || !got.ExpiresAt.Equal(exp) ||
			!got.AuthTime.Equal(want.AuthTime) || !got.RequestedAt.Equal(want.RequestedAt) ||
			!bytes.Equal(got.CodeHash, want.CodeHash) || got.CreatedAt.IsZero() {
			t.Errorf("Token = %+v, want %+v", got, want)
		}
		if got.Consented != nil {
			t.Errorf("SAD consent record %v, want none", got.Consented)
		}
		got, err = tx.Token(store.Fingerprint("at-1"))
		if err != nil {
			return err
		}
		if want := newToken("at-1", store.TokenAccess, "code-1", exp); !reflect.DeepEqual(got.Consented, want.Consented) {
			t.Errorf("access token consent record %v, want %v", got.Consented, want.Consented)
		}
		if _, err := tx.Token(store.Fingerprint("nope")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Token(unknown) = %v, want ErrNotFound", err)
		}
		return nil
	})
	// Duplicate and invalid tokens.
	err := s.Update(context.Background(), func(tx store.Tx) error {
		return tx.CreateToken(newToken("at-1", store.TokenAccess, "", exp))
	})
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("second CreateToken = %v, want ErrAlreadyExists", err)
	}
	bad := map[string]func(*store.Token){
		"short hash":       func(x *store.Token) { x.Hash = x.Hash[:8] },
		"unknown kind":     func(x *store.Token) { x.Kind = "id_token" },
		"no client":        func(x *store.Token) { x.ClientID = "" },
		"no user":          func(x *store.Token) { x.Username = "" },
		"no expiry":        func(x *store.Token) { x.ExpiresAt = time.Time{} },
		"sad no hashes":    func(x *store.Token) { x.Kind = store.TokenSAD; x.CredentialID = "c" },
		"access with cred": func(x *store.Token) { x.CredentialID = "c" },
		"short code hash":  func(x *store.Token) { x.CodeHash = []byte{1} },
		"consent digest":   func(x *store.Token) { x.Consented["x"] = nil },
		"consent name":     func(x *store.Token) { x.Consented[""] = []byte{1} },
	}
	wantInvalid(t, s, bad, func(name string) *store.Token { return newToken("bad-"+name, store.TokenAccess, "", exp) }, store.Tx.CreateToken)
	// Delete, then the token is gone and a second delete is ErrNotFound.
	update(t, s, func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("at-1")) })
	err = s.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("at-1")) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteToken = %v, want ErrNotFound", err)
	}
	// Writes inside View are refused.
	err = s.View(context.Background(), func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("sad-1")) })
	if !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("DeleteToken in View = %v, want ErrReadOnly", err)
	}
}

func testTokensByCode(t *testing.T, s store.Store) {
	exp := time.Now().Add(time.Hour)
	update(t, s, func(tx store.Tx) error {
		for _, v := range []string{"a", "b", "c"} {
			if err := tx.CreateToken(newToken(v, store.TokenAccess, "code-X", exp)); err != nil {
				return err
			}
		}
		return tx.CreateToken(newToken("other", store.TokenAccess, "code-Y", exp))
	})
	var n int
	update(t, s, func(tx store.Tx) (err error) {
		n, err = tx.DeleteTokensByCode(store.Fingerprint("code-X"))
		return err
	})
	if n != 3 {
		t.Errorf("DeleteTokensByCode removed %d, want 3", n)
	}
	view(t, s, func(tx store.Tx) error {
		for _, v := range []string{"a", "b", "c"} {
			if _, err := tx.Token(store.Fingerprint(v)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("token %s after revocation: %v", v, err)
			}
		}
		if _, err := tx.Token(store.Fingerprint("other")); err != nil {
			t.Errorf("token of another code: %v", err)
		}
		return nil
	})
	update(t, s, func(tx store.Tx) (err error) {
		n, err = tx.DeleteTokensByCode(store.Fingerprint("code-X"))
		return err
	})
	if n != 0 {
		t.Errorf("second DeleteTokensByCode removed %d", n)
	}
}

func testExpiredTokens(t *testing.T, s store.Store) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	update(t, s, func(tx store.Tx) error {
		for i, d := range []time.Duration{-time.Hour, -time.Second, 0, time.Nanosecond, time.Hour} {
			if err := tx.CreateToken(newToken(string(rune('a'+i)), store.TokenAccess, "code", now.Add(d))); err != nil {
				return err
			}
		}
		return nil
	})
	var n int
	update(t, s, func(tx store.Tx) (err error) {
		// Another time zone for the same instant changes nothing.
		n, err = tx.DeleteExpiredTokens(now.In(time.FixedZone("X", -7*3600)))
		return err
	})
	if n != 3 {
		t.Errorf("DeleteExpiredTokens removed %d, want 3 (expired at or before now)", n)
	}
	view(t, s, func(tx store.Tx) error {
		for i, alive := range []bool{false, false, false, true, true} {
			_, err := tx.Token(store.Fingerprint(string(rune('a' + i))))
			if alive != (err == nil) {
				t.Errorf("token %d: alive %v, err %v", i, alive, err)
			}
		}
		return nil
	})
	// The by-code index lost the swept tokens too.
	update(t, s, func(tx store.Tx) (err error) {
		n, err = tx.DeleteTokensByCode(store.Fingerprint("code"))
		return err
	})
	if n != 2 {
		t.Errorf("DeleteTokensByCode after sweep removed %d, want 2", n)
	}
}

// testConcurrentConsume shows single use: of N goroutines deleting the same
// SAD, each in its own Update, exactly one succeeds.
func testConcurrentConsume(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error {
		return tx.CreateToken(newToken("sad", store.TokenSAD, "", time.Now().Add(time.Hour)))
	})
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, notFound := 0, 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(context.Background(), func(tx store.Tx) error {
				if _, err := tx.Token(store.Fingerprint("sad")); err != nil {
					return err
				}
				return tx.DeleteToken(store.Fingerprint("sad"))
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrNotFound):
				notFound++
			default:
				t.Errorf("consume: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || notFound != n-1 {
		t.Errorf("wins %d, not found %d; want 1 and %d", wins, notFound, n-1)
	}
}

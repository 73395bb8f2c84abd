package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// bearerFixture stores user alice (active), client rp and the access token
// "tok" of alice at rp (issued by code "code"), valid for an hour after now.
func bearerFixture(t testing.TB, s store.Store, now time.Time) {
	t.Helper()
	err := s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive}); err != nil {
			return err
		}
		if err := tx.CreateClient(&store.Client{ID: "rp", SecretHash: store.HashSecret("s"), RedirectURIs: []string{"https://rp.example/cb"}}); err != nil {
			return err
		}
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint("tok"), Kind: store.TokenAccess, ClientID: "rp", Username: "alice",
			Scopes: []string{"service"}, CodeHash: store.Fingerprint("code"),
			AuthTime: now.Add(-time.Minute), RequestedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour),
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countingStore counts the token lookups RequireBearer makes.
type countingStore struct {
	s      oauth.BearerStore
	tokens atomic.Int64
}

type countingTx struct {
	oauth.BearerTx
	n *atomic.Int64
}

func (c countingTx) Token(hash []byte) (*store.Token, error) {
	c.n.Add(1)
	return c.BearerTx.Token(hash)
}

func (c *countingStore) View(ctx context.Context, fn func(oauth.BearerTx) error) error {
	return c.s.View(ctx, func(tx oauth.BearerTx) error { return fn(countingTx{tx, &c.tokens}) })
}

// bearerServer is a route behind RequireBearer (scope service) on bs.
func bearerServer(bs oauth.BearerStore, now time.Time) *echo.Echo {
	e := echo.New()
	e.GET("/r", func(c echo.Context) error { return c.String(http.StatusOK, oauth.GrantFrom(c).Username) },
		oauth.RequireBearer(oauth.BearerConfig{Store: bs, Now: func() time.Time { return now }, Realm: "r", Scope: "service"}))
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		status := http.StatusInternalServerError
		if oe, ok := errors.AsType[*oauth.Error](err); ok {
			status = oe.Status
		}
		_ = c.NoContent(status)
	}
	return e
}

func bearerGet(e *echo.Echo, token string) int {
	req := httptest.NewRequest(http.MethodGet, "/r", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec.Code
}

// TestBearerCacheHits: a second request with the same token is answered
// from the cache (no token lookup), so the revocation tests below test the
// cache and not the store.
func TestBearerCacheHits(t *testing.T) {
	backends.Each(t, func(t *testing.T, s store.Store) {
		now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		bearerFixture(t, s, now)
		cs := &countingStore{s: bearerStore(s)}
		e := bearerServer(cs, now)
		for i := range 3 {
			if got := bearerGet(e, "tok"); got != http.StatusOK {
				t.Fatalf("request %d: status %d", i, got)
			}
		}
		if n := cs.tokens.Load(); n != 1 {
			t.Errorf("%d token lookups for 3 requests, want 1", n)
		}
		// A SAD consumed meanwhile (the signing traffic) keeps the cache.
		if err := s.Update(context.Background(), func(tx store.Tx) error {
			return tx.CreateToken(&store.Token{
				Hash: store.Fingerprint("sad"), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
				Scopes: []string{"credential"}, CredentialID: "c", Hashes: [][]byte{make([]byte, 32)},
				ExpiresAt: now.Add(time.Hour),
			})
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("sad")) }); err != nil {
			t.Fatal(err)
		}
		if got := bearerGet(e, "tok"); got != http.StatusOK {
			t.Fatalf("after a SAD: status %d", got)
		}
		if n := cs.tokens.Load(); n != 1 {
			t.Errorf("%d token lookups after consuming a SAD, want 1", n)
		}
	})
}

// bearerRevocations are the ways an admin (or a code reuse) stops an
// access token; each is what today's lookup refuses.
func bearerRevocations() []struct {
	name string
	fn   func(tx store.Tx) error
} {
	return []struct {
		name string
		fn   func(tx store.Tx) error
	}{
		{"token_revoked", func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("tok")) }},
		{"code_reused", func(tx store.Tx) error { _, err := tx.DeleteTokensByCode(store.Fingerprint("code")); return err }},
		{"client_removed", func(tx store.Tx) error {
			if _, err := tx.RevokeClient("rp"); err != nil {
				return err
			}
			return tx.DeleteClient("rp")
		}},
		{"client_removed_without_revocation", func(tx store.Tx) error { return tx.DeleteClient("rp") }},
		{"user_disabled", func(tx store.Tx) error {
			return storetest.EditUser(tx, "alice", func(u *store.User) { u.Status = store.UserDisabled })
		}},
		{"password_reset", func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			if u.PasswordHash, err = store.HashPassword(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}, []byte("new")); err != nil {
				return err
			}
			if err := tx.PutUser(u); err != nil {
				return err
			}
			_, err = tx.RevokeUser("alice")
			return err
		}},
		{"user_removed", func(tx store.Tx) error {
			if _, err := tx.RevokeUser("alice"); err != nil {
				return err
			}
			return tx.DeleteUser("alice")
		}},
	}
}

// eachRevocation runs test for every revocation on every backend, with
// the bearer fixture stored and a server over it.
func eachRevocation(t *testing.T, test func(t *testing.T, name string, revoke func(tx store.Tx) error, s store.Store, e *echo.Echo)) {
	for _, rv := range bearerRevocations() {
		t.Run(rv.name, func(t *testing.T) {
			backends.Each(t, func(t *testing.T, s store.Store) {
				now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
				bearerFixture(t, s, now)
				test(t, rv.name, rv.fn, s, bearerServer(bearerStore(s), now))
			})
		})
	}
}

// TestBearerCacheRevocation: a token the cache accepted is refused by the
// first request after the revocation commits, for every revocation.
func TestBearerCacheRevocation(t *testing.T) {
	eachRevocation(t, func(t *testing.T, name string, revoke func(tx store.Tx) error, s store.Store, e *echo.Echo) {
		for range 2 {
			if got := bearerGet(e, "tok"); got != http.StatusOK {
				t.Fatalf("before: status %d", got)
			}
		}
		if err := s.Update(context.Background(), revoke); err != nil {
			t.Fatal(err)
		}
		if got := bearerGet(e, "tok"); got != http.StatusUnauthorized {
			t.Errorf("after %s: status %d, want 401", name, got)
		}
	})
}

// TestBearerCacheRevocationRace: requests run in parallel goroutines while
// the revocation commits; none that starts after the commit returned may
// pass.
func TestBearerCacheRevocationRace(t *testing.T) {
	eachRevocation(t, func(t *testing.T, name string, revoke func(tx store.Tx) error, s store.Store, e *echo.Echo) {
		var revoked, stop atomic.Bool
		var before, late atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				for !stop.Load() {
					after := revoked.Load()
					code := bearerGet(e, "tok")
					switch {
					case after && code == http.StatusOK:
						late.Add(1)
					case !after && code == http.StatusOK:
						before.Add(1)
					}
				}
			})
		}
		close(start)
		for before.Load() < 50 { // the cache is warm and in use
			time.Sleep(time.Millisecond)
		}
		if err := s.Update(context.Background(), revoke); err != nil {
			t.Fatal(err)
		}
		revoked.Store(true)
		time.Sleep(20 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		if n := late.Load(); n != 0 {
			t.Errorf("%d requests that started after %s committed passed", n, name)
		}
	})
}

// swapStore is a BearerStore whose backend can be replaced: the daemon's
// cache outliving the store handle that filled it.
type swapStore struct {
	mu sync.Mutex
	s  store.Store
}

func (w *swapStore) View(ctx context.Context, fn func(oauth.BearerTx) error) error {
	w.mu.Lock()
	s := w.s
	w.mu.Unlock()
	return bearerStore(s).View(ctx, fn)
}

// TestBearerCacheSeesAnotherHandle: a revocation written by another
// process on the same bbolt file (the admin CLI while the daemon's handle
// is closed) is seen, because the generation lives in the file, not in the
// process.
func TestBearerCacheSeesAnotherHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signd.db")
	open := func() *bolt.DB {
		db, err := bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	daemon := open()
	bearerFixture(t, daemon, now)
	w := &swapStore{s: daemon}
	e := bearerServer(w, now)
	if got := bearerGet(e, "tok"); got != http.StatusOK {
		t.Fatalf("before: status %d", got)
	}
	daemon.Close()

	// The admin CLI: another process opens the file and revokes.
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBearerCacheRevokeInAnotherProcess$")
	cmd.Env = append(os.Environ(), revokeFileEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}

	daemon = open()
	t.Cleanup(func() { daemon.Close() })
	w.mu.Lock()
	w.s = daemon
	w.mu.Unlock()
	if got := bearerGet(e, "tok"); got != http.StatusUnauthorized {
		t.Errorf("after the other process revoked: status %d, want 401", got)
	}
}

// revokeFileEnv names the bbolt file TestBearerCacheRevokeInAnotherProcess
// revokes the token "tok" in.
const revokeFileEnv = "SIGND_TEST_REVOKE_FILE"

// TestBearerCacheRevokeInAnotherProcess is the other process of
// TestBearerCacheSeesAnotherHandle; alone it does nothing.
func TestBearerCacheRevokeInAnotherProcess(t *testing.T) {
	path := os.Getenv(revokeFileEnv)
	if path == "" {
		return
	}
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("tok")) }); err != nil {
		t.Fatal(err)
	}
}

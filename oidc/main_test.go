package oidc_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// token is the software token every test of this package signs with
// (hsm/hsmtest/softtoken): the protocol is under test here, not the device.
var token = softtoken.New(softtoken.Options{})

// clock is the shared settable test clock.
type clock = storetest.Clock

func newClock() *clock { return storetest.NewClock(time.Now().UTC().Truncate(time.Second)) }

const (
	testIssuer    = "https://op.example.com"
	testNamespace = "com.vendor"
	idTokenTTL    = time.Hour
)

// memoryStore returns an empty in-memory store (store/memory).
func memoryStore(t *testing.T) *memory.DB {
	t.Helper()
	return backends.Memory(t, memory.Options{})
}

// openStore opens a bbolt file in dir, for the tests whose subject is what
// bbolt holds on disk.
func openStore(t *testing.T, dir string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "signd.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fixture is a provider on a fresh store with a settable clock.
type fixture struct {
	t     *testing.T
	clock *clock
	db    store.Store
	keys  *oidc.KeyRing
	p     *oidc.Provider
	e     *echo.Echo
	salt  []byte
	// wrapOAuth, when set, wraps the authorization server's store (fault
	// injection) in newFlowEnvWith.
	wrapOAuth func(oauth.Store) oauth.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	salt := make([]byte, oidc.SaltSize)
	if _, err := rand.Read(salt); err != nil {
		t.Fatal(err)
	}
	return newFixtureWith(t, memoryStore(t), salt, newClock())
}

func newFixtureWith(t *testing.T, db store.Store, salt []byte, c *clock) *fixture {
	t.Helper()
	pw, err := oidc.NewPairwise(salt)
	if err != nil {
		t.Fatal(err)
	}
	keys := &oidc.KeyRing{Store: keyRingStore(db), HSM: token, IDTokenTTL: idTokenTTL, Now: c.Now}
	t.Cleanup(func() { destroyKeys(t, keys) })
	p := &oidc.Provider{
		Issuer: testIssuer, Claims: oidc.Claims{Namespace: testNamespace}, Store: providerStore(db), Keys: keys,
		Subjects: pw, IDTokenTTL: idTokenTTL, Now: c.Now,
	}
	e := echo.New()
	e.HTTPErrorHandler = oauth.NewRenderer(nil).Handle
	if err := p.Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, clock: c, db: db, keys: keys, p: p, e: e, salt: salt}
}

// destroyKeys removes the test's keys from the shared token.
func destroyKeys(t *testing.T, r *oidc.KeyRing) {
	ks, err := r.Keys(context.Background())
	if err != nil {
		return // store already closed: keys leak into the temp token, harmless
	}
	for _, k := range ks {
		_ = token.DestroyKey(context.Background(), k.KeyID)
	}
}

// do sends a request to the fixture's router.
func (f *fixture) do(method, target, contentType, body string, header http.Header) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	rec := httptest.NewRecorder()
	f.e.ServeHTTP(rec, req)
	return rec
}

func (f *fixture) update(fn func(tx store.Tx) error) {
	f.t.Helper()
	if err := f.db.Update(context.Background(), fn); err != nil {
		f.t.Fatal(err)
	}
}

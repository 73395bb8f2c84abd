package oidc_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	softhsmtest "github.com/signd/signd/softhsm-test"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
)

// token is the SoftHSM2 token every test of this package signs with;
// softTok describes it.
var (
	token   *hsm.Token
	softTok *softhsmtest.Token
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if softhsmtest.FuzzOnly() { // the fuzz targets need no token
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "signd-oidc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if softTok, err = softhsmtest.Setup(dir, "signd-oidc-test"); err != nil {
		fmt.Fprintln(os.Stderr, "oidc tests need SoftHSM2:", err)
		return 1
	}
	if token, err = hsm.Open(hsm.Config{Module: softTok.Module, TokenLabel: softTok.Label, PIN: softTok.PIN}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer token.Close()
	return m.Run()
}

// clock is the shared settable test clock.
type clock = storetest.Clock

func newClock() *clock { return storetest.NewClock(time.Now().UTC().Truncate(time.Second)) }

const (
	testIssuer    = "https://op.example.com"
	testNamespace = "com.vendor"
	idTokenTTL    = time.Hour
)

// openStore opens a bbolt file in dir (t.TempDir() when dir is "").
func openStore(t *testing.T, dir string) *bolt.DB {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
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
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	salt := make([]byte, oidc.SaltSize)
	if _, err := rand.Read(salt); err != nil {
		t.Fatal(err)
	}
	return newFixtureWith(t, openStore(t, ""), salt, newClock())
}

func newFixtureWith(t *testing.T, db store.Store, salt []byte, c *clock) *fixture {
	t.Helper()
	pw, err := oidc.NewPairwise(salt)
	if err != nil {
		t.Fatal(err)
	}
	keys := &oidc.KeyRing{Store: db, HSM: token, IDTokenTTL: idTokenTTL, Now: c.Now}
	t.Cleanup(func() { destroyKeys(t, keys) })
	p := &oidc.Provider{
		Issuer: testIssuer, Claims: oidc.Claims{Namespace: testNamespace}, Store: db, Keys: keys,
		Subjects: pw, IDTokenTTL: idTokenTTL, Now: c.Now,
	}
	e := echo.New()
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

package oauth_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store/bolt"
)

// BenchmarkRequireBearer measures the bearer check of one request on a
// bbolt store: cache=off reads the token, its client and its user (the
// lookup without a cache), cache=on reads the revocation generation and
// answers from the cache.
//
//	go test -run '^$' -bench RequireBearer -benchmem ./oauth
func BenchmarkRequireBearer(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "signd.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	bearerFixture(b, db, now)
	for _, bc := range []struct {
		name string
		size int
	}{{"cache=off", -1}, {"cache=on", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			mw := oauth.RequireBearer(oauth.BearerConfig{
				Store: bearerStore(db), Now: func() time.Time { return now }, Realm: "r", Scope: "service",
				CacheSize: bc.size,
			})
			h := mw(func(c echo.Context) error { return nil })
			e := echo.New()
			req := httptest.NewRequest(http.MethodPost, "/csc/v1/credentials/list", nil)
			req.Header.Set("Authorization", "Bearer tok")
			rec := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				if err := h(e.NewContext(req, rec)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package sad_test

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/csc/sad"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// TestMount: without a PIN checker credentials/authorize is not offered
// (csc answers it 501), the other two methods are; a Handler without its
// certificate checks or without a hash cap is refused.
func TestMount(t *testing.T) {
	bearer := func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	h := sad.Handler{
		Store: store.Scope(memory.New(memory.Options{}), func(tx store.Tx) protocol.Tx { return tx }),
		Certs: &protocol.Certs{}, MaxHashes: 1, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
	}
	r := protocol.NewRoutes(echo.New().Group("/csc/v1"))
	if err := h.Mount(r, bearer); err != nil {
		t.Fatal(err)
	}
	if want := []string{"credentials/extendTransaction", "credentials/sendOTP"}; !slices.Equal(r.Methods(), want) {
		t.Errorf("methods %v, want %v", r.Methods(), want)
	}

	noCerts, noCap := h, h
	noCerts.Certs, noCap.MaxHashes = nil, 0
	for _, bad := range []sad.Handler{noCerts, noCap} {
		r := protocol.NewRoutes(echo.New().Group("/csc/v1"))
		if err := bad.Mount(r, bearer); err == nil || len(r.Methods()) != 0 {
			t.Errorf("Mount of %+v: %v, methods %v; want an error and none", bad, err, r.Methods())
		}
	}
}

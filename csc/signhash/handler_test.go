package signhash_test

import (
	"context"
	"crypto"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/csc/signhash"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

type noSigner struct{}

func (noSigner) SignDigests(context.Context, []byte, crypto.SignerOpts, [][]byte) ([][]byte, error) {
	return nil, nil
}
func (noSigner) CheckKey(context.Context, []byte) error { return nil }

// TestMountRequires: Mount refuses a Handler without one of its required
// fields, and registers signatures/signHash only when all are there.
func TestMountRequires(t *testing.T) {
	complete := func() *signhash.Handler {
		return &signhash.Handler{
			Store:  store.Scope(memory.New(memory.Options{}), func(tx store.Tx) protocol.Tx { return tx }),
			Signer: noSigner{}, Certs: &protocol.Certs{}, MaxHashes: 1,
			Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		}
	}
	for _, tc := range []struct {
		name  string
		unset func(*signhash.Handler)
		want  string // "" = mounted
	}{
		{"complete", func(*signhash.Handler) {}, ""},
		{"no Store", func(h *signhash.Handler) { h.Store = nil }, "required"},
		{"no Signer", func(h *signhash.Handler) { h.Signer = nil }, "required"},
		{"no Certs", func(h *signhash.Handler) { h.Certs = nil }, "required"},
		{"no Now", func(h *signhash.Handler) { h.Now = nil }, "required"},
		{"no Logger", func(h *signhash.Handler) { h.Logger = nil }, "required"},
		{"no MaxHashes", func(h *signhash.Handler) { h.MaxHashes = 0 }, "MaxHashes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := complete()
			tc.unset(h)
			r := protocol.NewRoutes(echo.New().Group("/csc/v1"))
			err := h.Mount(r, func(next echo.HandlerFunc) echo.HandlerFunc { return next })
			switch {
			case tc.want == "" && (err != nil || len(r.Methods()) != 1 || r.Methods()[0] != "signatures/signHash"):
				t.Fatalf("Mount: %v, methods %v", err, r.Methods())
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || len(r.Methods()) != 0):
				t.Fatalf("Mount: %v, methods %v; want an error about %s and no method", err, r.Methods(), tc.want)
			}
		})
	}
}

package csc_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// fullDisk is a csc.Store whose writes, while full is set, run and then
// fail to commit as bbolt's do on a full disk: store.ErrUnavailable
// wrapping ENOSPC, nothing committed.
type fullDisk struct {
	csc.Store
	full atomic.Bool
}

func (d *fullDisk) Batch(ctx context.Context, fn func(csc.Tx) error) error {
	if !d.full.Load() {
		return d.Store.Batch(ctx, fn)
	}
	return d.Store.Batch(ctx, storetest.ThenFail(fn, storetest.ErrDiskFull))
}

// TestSignHashStoreUnavailable: a signHash whose SAD consumption and audit
// entry cannot be committed answers 503 temporarily_unavailable with
// Retry-After, signs nothing and leaves the SAD usable; reads go on.
func TestSignHashStoreUnavailable(t *testing.T) {
	disk := &fullDisk{}
	e := newEnv(t, func(h *csc.Handler) { disk.Store = h.Store; h.Store = disk })
	bearer, cred := e.alice()
	d := digest("during the outage")
	sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)

	disk.full.Store(true)
	r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
	if r.status != http.StatusServiceUnavailable || r.str("error") != oauth.CodeTemporarilyUnavailable {
		t.Fatalf("signHash on a full disk: %d %s", r.status, r.raw)
	}
	if got := r.header.Get("Retry-After"); got != oauth.RetryAfter {
		t.Errorf("Retry-After %q, want %q", got, oauth.RetryAfter)
	}
	if r := e.call("credentials/list", bearer, `{}`); r.status != http.StatusOK {
		t.Errorf("credentials/list on a full disk: %d %s", r.status, r.raw)
	}
	var entries uint64
	e.view(func(tx store.Tx) error { entries, _, _ = store.VerifyAudit(tx); return nil })
	if entries != 0 {
		t.Errorf("%d audit entries after a signHash that could not be recorded", entries)
	}

	disk.full.Store(false)
	sigs := signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)))
	e.verify(cred, d, sigs[0])
}

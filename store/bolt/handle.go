package bolt

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
	"golang.org/x/sys/unix"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// What a failed write leaves behind (bbolt v1.5, tx.go Commit): bbolt
// writes a transaction copy-on-write — new pages first, fdatasync, then the
// meta page that makes them current, fdatasync. A failure before the meta
// page (ENOSPC, EDQUOT, EIO, EROFS from pwrite, fdatasync or the file
// grow) rolls back: the in-memory freelist is reloaded from the file and
// the pages written are unreferenced, so the handle stays usable and the
// file consistent; the next write simply tries again. Two cases differ:
//
//   - a failed remap (mmap) while growing leaves the handle unmapped, and
//     every later transaction, reads included, fails with
//     ErrInvalidMapping: the handle is poisoned and must be reopened. The
//     wrappers below reopen it transparently (the failed begin ran no
//     function, so retrying is safe);
//   - a meta page written but not synced (fdatasync failing after the
//     write) is already visible through the page cache: the transaction is
//     in effect committed although Commit failed. The caller sees
//     ErrUnavailable and must treat the outcome as unknown; for signHash
//     that means a SAD consumed and a "granted" entry without a signature,
//     never a signature without its entry.
//
// Every commit failure is reported as store.ErrUnavailable wrapping the
// cause, and remembered for Health until its own probe finds the store
// writable again (not merely the next small write that happens to fit in
// the file's free pages: readiness would flap).

// probeInterval is the least time between two write probes of Health.
const probeInterval = time.Second

// minFreeBytes is the free space Health wants on the store's filesystem
// before it calls a store writable again after a failed write.
const minFreeBytes = 1 << 20

// metaWriteProbe is the key the write probe rewrites in the meta bucket.
const metaWriteProbe = "write_probe"

// health is the DB's memory of its last write failure and of damage found
// while reading.
type health struct {
	mu      sync.Mutex
	failure error     // last failed commit, nil once Health's probe succeeded
	fails   uint64    // failed commits so far: a probe clears only what it saw
	probed  time.Time // last write probe
	corrupt error     // damage read (a fault, a bbolt panic): sticky until restart
}

// writeOK clears the failure, unless another write failed since the
// probe that found the store writable began (seen is fails at its start).
func (h *health) writeOK(seen uint64) {
	h.mu.Lock()
	if h.fails == seen {
		h.failure = nil
	}
	h.mu.Unlock()
}

func (h *health) writeFailed(err error) {
	h.mu.Lock()
	h.failure = err
	h.fails++
	h.mu.Unlock()
}

func (h *health) damaged(err error) {
	h.mu.Lock()
	if h.corrupt == nil {
		h.corrupt = err
	}
	h.mu.Unlock()
}

// handle returns the bbolt handle for one transaction, holding db.mu for
// reading until release is called. A handle found poisoned is reopened
// first (see reopen).
func (db *DB) handle() (h *bbolt.DB, release func(), err error) {
	db.mu.RLock()
	if db.stale && !db.closed {
		db.mu.RUnlock()
		if err := db.reopen(); err != nil {
			return nil, nil, err
		}
		db.mu.RLock()
	}
	if db.closed || db.db == nil {
		db.mu.RUnlock()
		return nil, nil, fmt.Errorf("store: %s: %w", db.path, bberrors.ErrDatabaseNotOpen)
	}
	return db.db, db.mu.RUnlock, nil
}

// poisoned reports a begin error that means the handle is unusable and a
// reopen may help.
func poisoned(err error) bool {
	return errors.Is(err, bberrors.ErrInvalidMapping) || errors.Is(err, bberrors.ErrDatabaseNotOpen)
}

// markStale makes the next transaction reopen the handle h (unless another
// goroutine already replaced it).
func (db *DB) markStale(h *bbolt.DB) {
	db.mu.Lock()
	if db.db == h && !db.closed {
		db.stale = true
	}
	db.mu.Unlock()
}

// reopen closes a poisoned handle and opens the file again, judging it as
// Open does. It fails with store.ErrUnavailable (or store.ErrCorrupt when
// the file is now damaged) and is tried again by the next transaction.
func (db *DB) reopen() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if !db.stale || db.closed {
		return nil
	}
	if db.db != nil {
		_ = db.db.Close() // a poisoned handle may fail to close cleanly; its lock goes with the fd
		db.db = nil
	}
	bdb, err := openFile(db.path, db.opts)
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			db.health.damaged(err)
			return err
		}
		return fmt.Errorf("%w: reopening %s: %w", store.ErrUnavailable, db.path, err)
	}
	db.db, db.stale = bdb, false
	db.log().Warn("store: reopened the database after its handle became unusable", "path", db.path)
	return nil
}

// guard runs fn with faults on the mapped file turned into panics
// (debug.SetPanicOnFault), and turns into store.ErrCorrupt, remembered for
// Health, what can only be damage: a fault, or a panic raised inside bbolt
// (its page assertions, or an index out of range on a mangled page). Any
// other panic is the caller's and goes on, as the store.Store contract
// says.
func (db *DB) guard(fn func() error) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		var what string
		if fe, ok := v.(interface{ Addr() uintptr }); ok {
			what = fmt.Sprintf("reading the mapped file faulted at %#x (%v)", fe.Addr(), v)
		} else if panickedInBbolt() {
			what = fmt.Sprintf("bbolt failed reading it: %v", v)
		} else {
			panic(v)
		}
		err = corruptError(db.path, what)
		db.health.damaged(err)
		db.log().Error("store: damaged page read", "path", db.path, "err", v)
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return fn()
}

// panickedInBbolt reports, from a deferred function of a panicking
// goroutine, whether the panic was raised in bbolt's code: the first frame
// below the runtime's panic machinery is bbolt's.
func panickedInBbolt() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case strings.HasPrefix(f.Function, "runtime."):
			if strings.HasPrefix(f.Function, "runtime.gopanic") || strings.HasPrefix(f.Function, "runtime.goPanic") ||
				strings.HasPrefix(f.Function, "runtime.panic") || f.Function == "runtime.sigpanic" {
				panicking = true
			}
		case panicking:
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// view runs fn in a read transaction.
func (db *DB) view(fn func(*bbolt.Tx) error) error {
	for attempt := 0; ; attempt++ {
		h, release, err := db.handle()
		if err != nil {
			return err
		}
		called := false
		err = db.guard(func() error {
			defer release()
			return h.View(func(btx *bbolt.Tx) error { called = true; return fn(btx) })
		})
		if err == nil || called || errors.Is(err, store.ErrCorrupt) {
			return err
		}
		if poisoned(err) {
			db.markStale(h)
			if attempt == 0 {
				continue
			}
		}
		return fmt.Errorf("%w: read from %s: %w", store.ErrUnavailable, db.path, err)
	}
}

// update runs fn in a write transaction. An error of fn is returned as it
// is; a failure to begin or commit is store.ErrUnavailable.
func (db *DB) update(fn func(*bbolt.Tx) error) error {
	for attempt := 0; ; attempt++ {
		h, release, err := db.handle()
		if err != nil {
			return err
		}
		called, fnFailed := false, false
		err = db.guard(func() error {
			defer release()
			return h.Update(func(btx *bbolt.Tx) error {
				called = true
				err := fn(btx)
				fnFailed = err != nil
				return err
			})
		})
		switch {
		case err == nil:
			return nil
		case fnFailed || errors.Is(err, store.ErrCorrupt):
			return err
		case !called && poisoned(err) && attempt == 0:
			db.markStale(h)
			continue
		}
		werr := fmt.Errorf("%w: write to %s failed: %w", store.ErrUnavailable, db.path, err)
		if !called && poisoned(err) {
			db.markStale(h)
		}
		db.health.writeFailed(werr)
		db.log().Error("store: write failed", "path", db.path, "err", err)
		return werr
	}
}

// Health reports whether the store can serve: nil, or an error wrapping
// store.ErrCorrupt (a damaged page was read: restart and run `signd store
// check`) or store.ErrUnavailable (the last write failed). After a failed
// write it reports the store writable again only when its filesystem has
// minFreeBytes free (statfs) and a small write of its own succeeds; it
// checks at most once a second, so that the store heals even when no
// request writes (a load balancer sends none to an unready instance). The
// free-space test keeps a small probe that the file's own free pages can
// hold from declaring a full disk writable.
func (db *DB) Health() error {
	db.health.mu.Lock()
	corrupt, failure, fails := db.health.corrupt, db.health.failure, db.health.fails
	due := failure != nil && db.now().Sub(db.health.probed) >= probeInterval
	if due {
		db.health.probed = db.now()
	}
	db.health.mu.Unlock()
	switch {
	case corrupt != nil:
		return corrupt
	case failure == nil:
		return nil
	case !due:
		return failure
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(db.path), &st); err == nil {
		if free := st.Bavail * uint64(st.Bsize); free < minFreeBytes {
			return fmt.Errorf("%w: %s: %d bytes free on its filesystem since a write failed", store.ErrUnavailable, db.path, free)
		}
	}
	if err := db.probe(); err != nil {
		return err
	}
	db.health.writeOK(fails)
	return nil
}

// probe rewrites meta/write_probe: one small commit.
func (db *DB) probe() error {
	stamp := []byte(db.now().UTC().Format(time.RFC3339Nano))
	return db.update(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte(kv.BucketMeta))
		if b == nil {
			return fmt.Errorf("store: bucket %s is missing", kv.BucketMeta)
		}
		return b.Put([]byte(metaWriteProbe), stamp)
	})
}

func (db *DB) log() *slog.Logger {
	if db.opts.Logger != nil {
		return db.opts.Logger
	}
	return slog.New(slog.DiscardHandler)
}

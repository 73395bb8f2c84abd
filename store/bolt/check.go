package bolt

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// maxProblems bounds the problems a report lists.
const maxProblems = 20

// CheckReport is the outcome of Check: OK, or the first problem found
// (Problem) and up to maxProblems of them (Problems).
type CheckReport struct {
	OK           bool     `json:"ok"`
	File         string   `json:"file"`
	Problem      string   `json:"problem,omitempty"`
	Problems     []string `json:"problems,omitempty"`
	PageSize     int      `json:"page_size,omitempty"`
	Pages        uint64   `json:"pages,omitempty"` // high water mark: the file's pages in use or free
	TxID         uint64   `json:"txid,omitempty"`  // last committed transaction
	Records      int      `json:"records"`         // records decoded
	AuditEntries uint64   `json:"audit_entries"`   // audit entries verified
	AuditHead    string   `json:"audit_head,omitempty"`
}

func (r *CheckReport) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r.Problem == "" {
		r.Problem = msg
	}
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, msg)
	}
}

// errCheckDone ends the transaction Check runs in, rolling it back.
var errCheckDone = errors.New("store: check done")

// Check examines the whole store, in order, stopping where going on could
// not be trusted:
//
//  1. the file: both meta pages, the size, the freelist (as Open does);
//  2. the structure of every page reachable from the root (walk.go);
//  3. bbolt's own consistency check (Tx.Check: pages freed twice,
//     unreachable or doubly referenced pages, key order);
//  4. every bucket exists and every record decodes;
//  5. the audit log's hash chain (store.VerifyAudit).
//
// A damaged store is a report with OK false, not an error; the error is
// for a check that could not run. On a writable DB the check runs inside a
// write transaction, which it rolls back: bbolt's check reads the shared
// freelist, which no writer may change meanwhile, so writes wait for it.
func (db *DB) Check(ctx context.Context) (*CheckReport, error) {
	rep := &CheckReport{File: db.path}
	run := db.update
	if db.opts.ReadOnly {
		run = db.view
	}
	err := run(func(btx *bbolt.Tx) error {
		db.checkTx(ctx, btx, rep)
		return errCheckDone
	})
	switch {
	case errors.Is(err, errCheckDone):
		err = nil
	case errors.Is(err, store.ErrCorrupt):
		rep.problem("%s", reason(err))
		err = nil
	}
	if err == nil {
		err = ctx.Err()
	}
	rep.OK = err == nil && rep.Problem == ""
	return rep, err
}

func (db *DB) checkTx(ctx context.Context, btx *bbolt.Tx, rep *CheckReport) {
	if !db.checkStructure(btx, rep) || ctx.Err() != nil {
		return
	}
	step(rep, "bbolt check", func() {
		for err := range btx.Check() {
			rep.problem("bbolt check: %v", err)
		}
	})
	if ctx.Err() != nil {
		return
	}
	step(rep, "records", func() { db.checkRecords(ctx, btx, rep) })
	if ctx.Err() != nil {
		return
	}
	step(rep, "audit log", func() {
		n, head, err := store.VerifyAudit(kv.NewTx(boltTx{btx}, db.now))
		rep.AuditEntries, rep.AuditHead = n, hex.EncodeToString(head)
		if err != nil {
			rep.problem("%v", err)
		}
	})
}

// checkStructure is the first two steps of Check: the file, and the
// structure of every page the transaction reaches.
func (db *DB) checkStructure(btx *bbolt.Tx, rep *CheckReport) bool {
	f, err := os.OpenFile(db.path, os.O_RDONLY|unix.O_NOFOLLOW, 0) // as the open: never through a link (place.go)
	if err != nil {
		rep.problem("file: %v", err)
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		rep.problem("file: %v", err)
		return false
	}
	ff, err := validateFormat(f, fi.Size())
	if err != nil {
		rep.problem("%v", err)
		return false
	}
	// Walk what this transaction sees (the same as the file's newest meta
	// page, as no commit runs meanwhile).
	ff.active.root = uint64(btx.Cursor().Bucket().RootPage())
	ff.active.pgid = uint64(btx.Size()) / uint64(ff.pageSize)
	rep.PageSize, rep.Pages, rep.TxID = ff.pageSize, ff.active.pgid, uint64(btx.ID())
	if err := newWalker(f, ff).tree(ff.active.root, 0, "root"); err != nil {
		rep.problem("structure: %v", err)
		return false
	}
	return true
}

// CheckStructure runs the first two steps of Check — the file, and the
// structure of every page reachable from the root — and fails with
// store.ErrCorrupt naming the first problem. After it, reading every
// record cannot run off a page or loop: offline readers of the whole
// store (audit verify and export) run it first. It runs in a read
// transaction: the pages it reaches are not reused meanwhile, but a meta
// page a concurrent commit is writing may read torn, so it is meant for a
// store no other process writes.
func (db *DB) CheckStructure(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rep := &CheckReport{File: db.path}
	err := db.view(func(btx *bbolt.Tx) error {
		db.checkStructure(btx, rep)
		return errCheckDone
	})
	if errors.Is(err, errCheckDone) {
		err = nil
	}
	if err == nil && rep.Problem != "" {
		err = corruptError(db.path, rep.Problem)
	}
	return err
}

// step runs one part of the check, turning a panic of bbolt on a damaged
// page into a problem.
func step(rep *CheckReport, name string, fn func()) {
	defer func() {
		if v := recover(); v != nil {
			rep.problem("%s: reading the store panicked: %v", name, v)
		}
	}()
	fn()
}

func (db *DB) checkRecords(ctx context.Context, btx *bbolt.Tx, rep *CheckReport) {
	for _, name := range bucketNames() {
		if btx.Bucket([]byte(name)) == nil {
			rep.problem("bucket %s is missing", name)
		}
	}
	for _, rb := range kv.RecordKinds() {
		b := btx.Bucket([]byte(rb.Bucket))
		if b == nil {
			continue
		}
		_ = b.ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := rb.Decode(v); err != nil {
				rep.problem("%s/%s: record does not decode: %v", rb.Bucket, printable(k), err)
				return nil
			}
			rep.Records++
			return nil
		})
	}
}

// reason returns what is wrong with a file from a store.ErrCorrupt error.
func reason(err error) string {
	var de *DamageError
	if errors.As(err, &de) {
		return de.Reason
	}
	return err.Error()
}

// CheckFile checks the store file at path, which no process may hold (it
// waits timeout for the lock, then fails with store.ErrLocked). A file
// Open would refuse is a report naming why, not an error.
func CheckFile(ctx context.Context, path string, timeout time.Duration) (*CheckReport, error) {
	db, err := Open(path, Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, store.ErrCorrupt) {
		rep := &CheckReport{File: path}
		rep.problem("%s", reason(err))
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Check(ctx)
}

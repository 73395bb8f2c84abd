package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
	"github.com/signd/signd/store/kv/groupcommit"
)

// schemaVersion is the version of the file layout described in doc.go.
// Version 2 added the party indexes of revocation (store/kv); version 3
// the binary form of token records (store/kv), which older builds cannot
// read, so they refuse the file instead of failing on each token.
const schemaVersion = 3

// DefaultTimeout is how long Open waits for another holder of the file to
// let go when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// fileMode is the mode of a newly created database file.
const fileMode = 0o600

// ErrUnsafeFile is returned by Open for an existing database file that
// other local users could read or write: group or other permission bits,
// or an owner other than the process's effective uid. The wrapping error
// names the file and the chmod or chown that fixes it.
var ErrUnsafeFile = errors.New("store: unsafe database file")

// metaSchemaVersion is the meta key of the schema version.
const metaSchemaVersion = "schema_version"

// bucketNames is the registry of buckets Open creates (kv.BucketNames);
// existing files get a new one at their next Open.
func bucketNames() []string { return kv.BucketNames() }

// migrate upgrades a file from version from to schemaVersion, one version at
// a time. It runs after every bucket in bucketNames exists.
func migrate(btx *bbolt.Tx, from int) error {
	for v := from; v < schemaVersion; v++ {
		switch v {
		case 0: // a new, empty file: creating the buckets was all it needed
		case 1: // file the records of version 1 in the new party indexes
			if err := kv.BuildPartyIndexes(boltTx{btx}); err != nil {
				return err
			}
		case 2: // JSON token records stay readable; new ones are binary
		default:
			return fmt.Errorf("no migration from schema version %d", v)
		}
	}
	return nil
}

// Options configure Open.
type Options struct {
	// Timeout is how long to wait for the file lock; zero or negative means
	// DefaultTimeout (bbolt's own zero would wait forever).
	Timeout time.Duration
	// Now is the clock for CreatedAt/UpdatedAt; nil means time.Now.
	Now func() time.Time
	// ReadOnly opens an existing file for reading only (a shared lock, no
	// schema upgrade): for checks and backups of a store no daemon holds.
	ReadOnly bool
	// VerifyOnOpen runs Check before Open returns and refuses a store with
	// a problem (store.ErrCorrupt naming it). It reads the whole file.
	VerifyOnOpen bool
	// Logger receives what the store does on its own (reopening a
	// handle, failed writes); nil discards it.
	Logger *slog.Logger

	// tune adjusts bbolt's options before the file is opened (benchmarks
	// comparing bbolt settings).
	tune func(*bbolt.Options)
}

// DB is a bbolt-backed store.Store. It is safe for concurrent use.
type DB struct {
	mu     sync.RWMutex // held for reading by every transaction, for writing to swap db
	db     *bbolt.DB
	stale  bool // db is poisoned: the next transaction reopens it (handle.go)
	closed bool

	path   string
	now    func() time.Time
	opts   Options
	health health              // write failures and damage seen (handle.go)
	batch  groupcommit.Batcher // group commit of Batch (batch.go)
}

var (
	_ store.Store   = (*DB)(nil)
	_ store.Batcher = (*DB)(nil)
)

// Open opens or creates the database file at path (mode 0600 when created).
// An existing file must be a regular file owned by the effective uid with
// no permission bits for group or others, else Open fails with
// ErrUnsafeFile and the command that fixes it. The parent directory must
// exist. The path must not be a symbolic link, and each directory on the
// way to it must be owned by root or the effective uid and not writable by
// all without the sticky bit (place.go): else Open fails with
// ErrUnsafeFile, and a missing file is not created. If another process (or
// another DB in this one) holds the file, Open fails after opts.Timeout
// with an error wrapping store.ErrLocked that names the file; a file
// written by a newer signd fails with store.ErrSchemaTooNew. A new or older
// file is brought to the current schema (a write only when something
// changes).
//
// An existing file is never re-initialised: an empty, truncated, foreign or
// damaged file fails with store.ErrCorrupt naming the file and the recovery
// (file.go), and opening it never panics.
func Open(path string, opts Options) (*DB, error) {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store: open %s: directory %s: %w", path, dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("store: open %s: %s is not a directory", path, dir)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	bdb, err := openFile(path, opts)
	if err != nil {
		return nil, err
	}
	db := &DB{db: bdb, path: path, now: now, opts: opts}
	if err := db.prepare(); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	if opts.VerifyOnOpen {
		rep, err := db.Check(context.Background())
		if err == nil && !rep.OK {
			err = corruptError(path, rep.Problem+" (store.verify_on_open)")
		}
		if err != nil {
			_ = bdb.Close()
			return nil, err
		}
	}
	return db, nil
}

// openFile judges the path (checkPath), the file (checkFile) and opens it with bbolt through openHook, turning a panic of
// bbolt on a file that passed into store.ErrCorrupt. Open and reopen both
// come here.
func openFile(path string, opts Options) (bdb *bbolt.DB, err error) {
	exists, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	if err := checkFile(path, opts.ReadOnly, opts.Timeout); err != nil {
		return nil, err
	}
	err = recoverOpen(path, func() (err error) {
		bo := &bbolt.Options{Timeout: opts.Timeout, ReadOnly: opts.ReadOnly}
		if opts.tune != nil {
			opts.tune(bo)
		}
		bo.OpenFile = openHook(!exists && !opts.ReadOnly)
		bdb, err = bbolt.Open(path, fileMode, bo)
		return err
	})
	if errors.Is(err, bberrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is held by another process, waited %s (is signd serve running?)", store.ErrLocked, path, opts.Timeout)
	}
	if err != nil && !errors.Is(err, store.ErrCorrupt) {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return bdb, err
}

// recoverOpen runs fn, which reads a file that passed checkFile, with
// faults turned into panics, and any panic into store.ErrCorrupt: at this
// point every panic of bbolt is about the file.
func recoverOpen(path string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = corruptError(path, fmt.Sprintf("bbolt failed reading it: %v", v))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return fn()
}

// prepare refuses a newer schema and upgrades an older one; a read-only
// open only refuses.
func (db *DB) prepare() error {
	return recoverOpen(db.path, func() error {
		var need bool
		err := db.view(func(btx *bbolt.Tx) (err error) {
			need, err = needsUpgrade(btx, db.path)
			return err
		})
		if err != nil || !need || db.opts.ReadOnly {
			return err
		}
		return db.update(func(btx *bbolt.Tx) error { return upgrade(btx, db.path) })
	})
}

// needsUpgrade reports whether upgrade would change anything, without
// writing: opening a store on a full disk must still work for reading.
func needsUpgrade(btx *bbolt.Tx, path string) (bool, error) {
	version, err := storedVersion(btx, path)
	if err != nil {
		return false, err
	}
	for _, name := range bucketNames() {
		if btx.Bucket([]byte(name)) == nil {
			return true, nil
		}
	}
	return version != schemaVersion, nil
}

// storedVersion reads meta/schema_version (0 for a new file) and refuses a
// version newer than this build's.
func storedVersion(btx *bbolt.Tx, path string) (int, error) {
	version := 0
	if meta := btx.Bucket([]byte(kv.BucketMeta)); meta != nil {
		if v := meta.Get([]byte(metaSchemaVersion)); v != nil {
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("store: open %s: bad schema version %q", path, v)
			}
			version = n
		}
	}
	if version > schemaVersion {
		return 0, fmt.Errorf("%w: %s has schema version %d, this signd supports up to %d (upgrade signd)",
			store.ErrSchemaTooNew, path, version, schemaVersion)
	}
	return version, nil
}

// upgrade refuses a newer schema, creates missing buckets and migrates an
// older file, all in the one write transaction of Open.
func upgrade(btx *bbolt.Tx, path string) error {
	version, err := storedVersion(btx, path)
	if err != nil {
		return err
	}
	for _, name := range bucketNames() {
		if _, err := btx.CreateBucketIfNotExists([]byte(name)); err != nil {
			return fmt.Errorf("store: open %s: bucket %s: %w", path, name, err)
		}
	}
	if version == schemaVersion {
		return nil
	}
	if err := migrate(btx, version); err != nil {
		return fmt.Errorf("store: open %s: migrate schema %d to %d: %w", path, version, schemaVersion, err)
	}
	meta := btx.Bucket([]byte(kv.BucketMeta))
	return meta.Put([]byte(metaSchemaVersion), []byte(strconv.Itoa(schemaVersion)))
}

// Path returns the file the DB was opened on.
func (db *DB) Path() string { return db.path }

// View runs fn in a read-only transaction; see store.Store. A fault on a
// damaged page of the mapped file fails with store.ErrCorrupt instead of
// killing the process.
func (db *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.view(func(btx *bbolt.Tx) error {
		return fn(kv.NewTx(boltTx{btx}, db.now))
	})
}

// Update runs fn in one write transaction; see store.Store. bbolt serializes
// write transactions and rolls back on error or panic. A failed commit
// (disk full, I/O error) is an error wrapping store.ErrUnavailable and the
// cause; nothing of fn is committed.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.update(func(btx *bbolt.Tx) error {
		return fn(kv.NewTx(boltTx{btx}, db.now))
	})
}

// Fence is Update (see store.Store): bbolt commits in the caller's
// goroutine, so a commit that failed has not applied and none is in
// flight once Update returned.
func (db *DB) Fence(ctx context.Context, fn func(store.Tx) error) error {
	return db.Update(ctx, fn)
}

// Close closes the file, waiting for running transactions.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	if db.db == nil {
		return nil
	}
	if err := db.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", db.path, err)
	}
	return nil
}

// checkPath judges the store path before anything opens it, and reports
// whether the file exists: a symbolic link is refused, dangling or not
// (place.go: the file that counts is the one at the path); then the
// place (checkPlace), so that root, refused in signd's directory, is told
// to run the command as signd rather than to chown signd's file; then an
// existing file (checkInfo): it holds password, PIN and client secret
// hashes, MAC keys and the audit chain, and no other local user may read
// or write it. A missing file is created by bbolt (openHook: O_EXCL, mode
// fileMode) where checkPlace allows it.
func checkPath(path string) (exists bool, err error) {
	fi, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("store: open %s: %w", path, err)
	}
	exists = err == nil
	if exists && fi.Mode().Type() == fs.ModeSymlink {
		return true, symlinkError(path)
	}
	if err := checkPlace(path, exists); err != nil {
		return exists, err
	}
	if !exists {
		return false, nil
	}
	return true, checkInfo(path, fi)
}

// checkInfo judges the file of fi (from Lstat, or fstat of an open file):
// a regular file owned by the effective uid with no permission bits for
// group or others.
func checkInfo(path string, fi fs.FileInfo) error {
	if fi.Mode().Type() == fs.ModeSymlink {
		return symlinkError(path)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrUnsafeFile, path, fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %#o; group and others must have no access (run: chmod 600 %s)",
			ErrUnsafeFile, path, perm, shellQuote(path))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by uid %d of this process; run signd as uid %d, or hand the file over (run: chown %d %s)",
			ErrUnsafeFile, path, st.Uid, euid, st.Uid, euid, shellQuote(path))
	}
	return nil
}

// shellQuote quotes p for a command line an operator pastes.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:=@%") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

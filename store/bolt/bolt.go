package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/signd/signd/store"
)

// schemaVersion is the version of the file layout described in doc.go.
// Version 2 added the party indexes of revocation (revoke.go).
const schemaVersion = 2

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

// Bucket names, one per kind of record.
const (
	bucketMeta         = "meta"
	bucketUsers        = "users"
	bucketProofs       = "proofs"
	bucketClients      = "clients"
	bucketCredentials  = "credentials"
	bucketCredsByOwner = "credentials_by_owner"
	bucketTokens       = "tokens"
	bucketTokensByCode = "tokens_by_code"
	bucketTokensByExp  = "tokens_by_expiry"
	bucketOIDCKeys     = "oidc_keys"

	metaSchemaVersion = "schema_version"
)

// bucketNames is the registry of buckets Open creates. A new kind of record
// (auth codes, tokens, SAD, audit log) adds its bucket here; existing files
// get it at their next Open, so a new bucket alone needs no schema bump.
func bucketNames() []string {
	return []string{
		bucketMeta,
		bucketUsers,
		bucketProofs,
		bucketClients,
		bucketCredentials,
		bucketCredsByOwner,
		bucketTokens,
		bucketTokensByCode,
		bucketTokensByExp,
		bucketAudit,
		bucketSecrets,
		bucketAuthRequests, // pending requests, codes, sessions (authflow.go)
		bucketAuthRequestsByExp,
		bucketCodes,
		bucketCodesByExp,
		bucketSessions,
		bucketSessionsByExp,
		bucketOIDCKeys,
		bucketTokensByParty, // revocation by user, client, credential (revoke.go)
		bucketCodesByParty,
		bucketAuthRequestsByParty,
		bucketSessionsByParty,
	}
}

// migrate upgrades a file from version from to schemaVersion, one version at
// a time. It runs after every bucket in bucketNames exists.
func migrate(btx *bbolt.Tx, from int) error {
	for v := from; v < schemaVersion; v++ {
		switch v {
		case 0: // a new, empty file: creating the buckets was all it needed
		case 1: // file the records of version 1 in the new party indexes
			if err := buildPartyIndexes(btx); err != nil {
				return err
			}
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
}

// DB is a bbolt-backed store.Store. It is safe for concurrent use.
type DB struct {
	db    *bbolt.DB
	path  string
	now   func() time.Time
	batch batcher // group commit of Batch (batch.go)
}

var _ store.Store = (*DB)(nil)

// Open opens or creates the database file at path (mode 0600 when created).
// An existing file must be a regular file owned by the effective uid with
// no permission bits for group or others, else Open fails with
// ErrUnsafeFile and the command that fixes it. The parent directory must
// exist. If another process (or another DB in this one) holds the file, Open
// fails after opts.Timeout with an error wrapping store.ErrLocked that names
// the file; a file written by a newer signd fails with store.ErrSchemaTooNew.
// A new or older file is brought to the current schema.
func Open(path string, opts Options) (*DB, error) {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store: open %s: directory %s: %w", path, dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("store: open %s: %s is not a directory", path, dir)
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	bdb, err := bbolt.Open(path, fileMode, &bbolt.Options{Timeout: timeout})
	if errors.Is(err, bberrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is held by another process, waited %s (is signd serve running?)", store.ErrLocked, path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := bdb.Update(func(btx *bbolt.Tx) error { return upgrade(btx, path) }); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	return &DB{db: bdb, path: path, now: now}, nil
}

// upgrade refuses a newer schema, creates missing buckets and migrates an
// older file, all in the one write transaction of Open.
func upgrade(btx *bbolt.Tx, path string) error {
	version := 0
	if meta := btx.Bucket([]byte(bucketMeta)); meta != nil {
		if v := meta.Get([]byte(metaSchemaVersion)); v != nil {
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 0 {
				return fmt.Errorf("store: open %s: bad schema version %q", path, v)
			}
			version = n
		}
	}
	if version > schemaVersion {
		return fmt.Errorf("%w: %s has schema version %d, this signd supports up to %d (upgrade signd)",
			store.ErrSchemaTooNew, path, version, schemaVersion)
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
	meta := btx.Bucket([]byte(bucketMeta))
	return meta.Put([]byte(metaSchemaVersion), []byte(strconv.Itoa(schemaVersion)))
}

// Path returns the file the DB was opened on.
func (db *DB) Path() string { return db.path }

// View runs fn in a read-only transaction; see store.Store.
func (db *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.db.View(func(btx *bbolt.Tx) error {
		return fn(&tx{btx: btx, now: db.now})
	})
}

// Update runs fn in one write transaction; see store.Store. bbolt serializes
// write transactions and rolls back on error or panic.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.db.Update(func(btx *bbolt.Tx) error {
		return fn(&tx{btx: btx, now: db.now})
	})
}

// Close closes the file, waiting for running transactions.
func (db *DB) Close() error {
	if err := db.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", db.path, err)
	}
	return nil
}

// checkFile refuses an existing database file other local users could read
// or write: it holds password, PIN and client secret hashes, MAC keys and
// the audit chain. A missing file is fine (bbolt creates it with fileMode).
// Stat follows a symlink: the file that counts is the one bbolt opens.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
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

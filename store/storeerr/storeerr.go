package storeerr

import (
	"errors"
	"fmt"
)

// Sentinel errors of every store backend. Backends wrap them with detail
// (fmt.Errorf("%w: ...", ErrX)); callers test with errors.Is.
var (
	// ErrNotFound is returned when the record asked for (or the record a Put
	// or Delete should replace) does not exist.
	ErrNotFound = errors.New("store: not found")

	// ErrAlreadyExists is returned by a Create of a key that is taken.
	ErrAlreadyExists = errors.New("store: already exists")

	// ErrReadOnly is returned by every write attempted inside View.
	ErrReadOnly = errors.New("store: write in a read-only transaction")

	// ErrInvalid is returned, wrapped with the reason, for a record that fails
	// validation (empty username, unknown status, relative redirect URI, ...).
	ErrInvalid = errors.New("store: invalid record")

	// ErrLocked is returned by a backend's Open when another process holds the
	// database file. The wrapping error names the file.
	ErrLocked = errors.New("store: database file is locked")

	// ErrSchemaTooNew is returned by a backend's Open when the database was
	// written by a newer signd with a schema version this build does not
	// know. The wrapping error names both versions.
	ErrSchemaTooNew = errors.New("store: schema version too new")

	// ErrUnavailable is returned, wrapping the cause (ENOSPC, EDQUOT, EIO,
	// EROFS from a write or fsync, a handle that must be reopened, a read
	// that failed, no quorum), when a backend could not commit a write
	// transaction. Nothing of the transaction is committed, reads may still
	// work, and the same write may succeed later (space freed, disk back):
	// protocol layers answer it with 503 and Retry-After, never 500. The
	// one exception is ErrOutcomeUnknown, which wraps it.
	ErrUnavailable = errors.New("store: unavailable")

	// ErrOutcomeUnknown is returned, wrapping the cause, for a write
	// transaction that was sent to be committed and whose answer was lost
	// (store/etcd: its Txn's attempt timed out, the connection dropped, the
	// caller's context ended after the Txn was sent): it may have
	// committed, or may still commit. It wraps ErrUnavailable, so
	// errors.Is(err, ErrUnavailable) holds for it too and protocol layers
	// answer it with 503 as any other; only a caller that would undo an
	// effect outside the store on failure (destroy a key it generated)
	// tells it apart (store.MayHaveCommitted) and reads the store first to
	// learn whether the write is there. A backend never returns it for a
	// write that cannot have committed: a failed read, a transaction
	// whose commit was never sent, a commit refused before it was proposed,
	// the conflict retry limit, a failed bbolt write or fsync.
	ErrOutcomeUnknown = fmt.Errorf("%w, outcome unknown", ErrUnavailable)

	// ErrCorrupt is returned when the database file is damaged or is not a
	// store at all (empty, truncated, foreign, a broken page). The wrapping
	// error names the file and how to recover; a backend never re-creates a
	// store over such a file.
	ErrCorrupt = errors.New("store: database file is damaged")
)

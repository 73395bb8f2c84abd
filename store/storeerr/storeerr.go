package storeerr

import "errors"

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
	// EROFS from a write or fsync, a handle that must be reopened), when a
	// backend could not commit a write transaction. Nothing of the
	// transaction is committed, reads may still work, and the same write may
	// succeed later (space freed, disk back): protocol layers answer it with
	// 503 and Retry-After, never 500. One exception: store/etcd returns it
	// too for a commit whose outcome is unknown (its answer was lost; it
	// may have applied), so a caller that would undo an effect outside the
	// store on this error (destroy a key it generated) reads the store
	// first to learn whether the write is there.
	ErrUnavailable = errors.New("store: unavailable")

	// ErrCorrupt is returned when the database file is damaged or is not a
	// store at all (empty, truncated, foreign, a broken page). The wrapping
	// error names the file and how to recover; a backend never re-creates a
	// store over such a file.
	ErrCorrupt = errors.New("store: database file is damaged")
)

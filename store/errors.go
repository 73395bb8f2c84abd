package store

import (
	"errors"

	"github.com/signd/signd/store/storeerr"
)

// Sentinel errors of every store backend, defined (and documented) in
// package storeerr; these are the same values. Backends wrap them with
// detail (fmt.Errorf("%w: ...", ErrX)); callers test with errors.Is.
var (
	ErrNotFound       = storeerr.ErrNotFound       // the record asked for (or to replace) does not exist
	ErrAlreadyExists  = storeerr.ErrAlreadyExists  // a Create of a key that is taken
	ErrReadOnly       = storeerr.ErrReadOnly       // a write inside View
	ErrInvalid        = storeerr.ErrInvalid        // a record that fails validation, wrapped with the reason
	ErrLocked         = storeerr.ErrLocked         // Open: another process holds the database file
	ErrSchemaTooNew   = storeerr.ErrSchemaTooNew   // Open: written by a newer signd
	ErrUnavailable    = storeerr.ErrUnavailable    // a write transaction could not be committed; may succeed later (503)
	ErrOutcomeUnknown = storeerr.ErrOutcomeUnknown // wraps ErrUnavailable: a commit was sent and its answer lost; it may have applied
	ErrCorrupt        = storeerr.ErrCorrupt        // the database file is damaged or not a store
)

// MayHaveCommitted reports whether a write transaction that failed with
// err may have committed all the same: only ErrOutcomeUnknown, which
// store/etcd returns for a commit it sent whose answer was lost — the
// attempt timed out, the connection dropped, or the caller's context
// ended after the send (then the error wraps ctx.Err() too). Every other
// error, plain ErrUnavailable (a failed read, a commit never sent or
// refused before it was proposed, the conflict retry limit, a bbolt write
// or fsync that failed) and a bare context error (bbolt checks the
// context before it writes; store/etcd before it sends) means nothing
// committed. A caller that would undo an effect outside the store on
// such an error (a key it generated in the HSM) learns first, when this
// is true, whether the write is there: Settle, which reads through a
// fence (Store.Fence) that a commit still in flight cannot pass.
func MayHaveCommitted(err error) bool {
	return errors.Is(err, ErrOutcomeUnknown)
}

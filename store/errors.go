package store

import (
	"context"
	"errors"

	"github.com/signd/signd/store/storeerr"
)

// Sentinel errors of every store backend, defined (and documented) in
// package storeerr; these are the same values. Backends wrap them with
// detail (fmt.Errorf("%w: ...", ErrX)); callers test with errors.Is.
var (
	ErrNotFound      = storeerr.ErrNotFound      // the record asked for (or to replace) does not exist
	ErrAlreadyExists = storeerr.ErrAlreadyExists // a Create of a key that is taken
	ErrReadOnly      = storeerr.ErrReadOnly      // a write inside View
	ErrInvalid       = storeerr.ErrInvalid       // a record that fails validation, wrapped with the reason
	ErrLocked        = storeerr.ErrLocked        // Open: another process holds the database file
	ErrSchemaTooNew  = storeerr.ErrSchemaTooNew  // Open: written by a newer signd
	ErrUnavailable   = storeerr.ErrUnavailable   // a write transaction could not be committed; may succeed later (503)
	ErrCorrupt       = storeerr.ErrCorrupt       // the database file is damaged or not a store
)

// MayHaveCommitted reports whether a write transaction that failed with
// err may have committed all the same: ErrUnavailable (store/etcd returns
// it for a commit whose answer was lost) or the end of the caller's
// context (store/etcd returns ctx.Err() then, whatever the commit did). A
// caller that would undo an effect outside the store on such an error (a
// key it generated in the HSM) reads the store first to learn whether the
// write is there.
func MayHaveCommitted(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

package store

import "github.com/signd/signd/store/storeerr"

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

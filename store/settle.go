package store

import (
	"context"
	"errors"
)

// Fencer is what Settle reads through: a Store, or a Scoped store.
type Fencer[T any] interface {
	Fence(ctx context.Context, fn func(T) error) error
}

// Fate is what Settle learned of a write transaction that failed.
type Fate int

const (
	// NotCommitted: nothing of the write is stored, and it never will
	// be. What was done outside the store for it is undone (the key
	// generated in the HSM destroyed).
	NotCommitted Fate = iota
	// Committed: the write is stored after all; the act succeeded.
	Committed
	// FateUnknown: the store could not be read. What was done outside
	// the store is kept (a stored record whose key is destroyed cannot
	// be mended; a key nobody names can be removed) and named to the
	// operator.
	FateUnknown
)

// Settle learns the fate of a write transaction that failed with err, for
// a caller that did something outside the store for it that it would
// otherwise undo. A failure that cannot have committed
// (!MayHaveCommitted) is NotCommitted without a read. Otherwise found
// runs in a fence (Store.Fence), so that a commit still in flight cannot
// apply after it: found returns nil when the write's record is there
// (Committed), an error wrapping ErrNotFound when it is not (NotCommitted:
// it never will be); when the fence fails or found fails otherwise, the
// fate is FateUnknown and Settle returns that error. The fence runs even
// when ctx has ended: the caller must learn the fate of what it made.
func Settle[T any](ctx context.Context, s Fencer[T], err error, found func(T) error) (Fate, error) {
	if !MayHaveCommitted(err) {
		return NotCommitted, nil
	}
	var ferr error
	if err := s.Fence(context.WithoutCancel(ctx), func(tx T) error {
		ferr = found(tx)
		if errors.Is(ferr, ErrNotFound) {
			return nil // absent is an answer: the fence commits
		}
		return ferr
	}); err != nil {
		return FateUnknown, err
	}
	if ferr != nil {
		return NotCommitted, nil
	}
	return Committed, nil
}

package store

import "context"

// Scoped is a Store seen through the narrower transaction interface T that
// its consumer declares: the functions passed to View, Update and Batch get
// a T, so the consumer can call only the methods T has. T is composed of the
// role interfaces of Tx (UserReader, TokenTx, AuditAppender, …).
//
// A Scoped adds one function call per transaction to the backend's cost.
type Scoped[T any] struct {
	s      Store
	batch  func(ctx context.Context, fn func(Tx) error) error
	narrow func(Tx) T
}

// Scope returns s seen through T. narrow converts a Tx to T, and is
// typically `func(tx store.Tx) csc.Tx { return tx }`: the compiler checks
// that every Tx is a T. Batch uses s's own Batch when s is a Batcher.
func Scope[T any](s Store, narrow func(Tx) T) *Scoped[T] {
	sc := &Scoped[T]{s: s, batch: s.Update, narrow: narrow}
	if b, ok := s.(Batcher); ok {
		sc.batch = b.Batch
	}
	return sc
}

// View runs fn in a read-only transaction of the backend (Store.View).
func (s *Scoped[T]) View(ctx context.Context, fn func(T) error) error {
	return s.s.View(ctx, func(tx Tx) error { return fn(s.narrow(tx)) })
}

// Update runs fn in one write transaction of the backend (Store.Update).
func (s *Scoped[T]) Update(ctx context.Context, fn func(T) error) error {
	return s.s.Update(ctx, func(tx Tx) error { return fn(s.narrow(tx)) })
}

// Fence runs fn in the backend's fencing write transaction (Store.Fence).
func (s *Scoped[T]) Fence(ctx context.Context, fn func(T) error) error {
	return s.s.Fence(ctx, func(tx Tx) error { return fn(s.narrow(tx)) })
}

// Batch runs fn in a write transaction that the backend may share with
// concurrent Batch calls (Batcher), else in its own Update. fn may run more
// than once: it must not have effects outside the transaction.
func (s *Scoped[T]) Batch(ctx context.Context, fn func(T) error) error {
	return s.batch(ctx, func(tx Tx) error { return fn(s.narrow(tx)) })
}

// Viewer is the read side of a store seen through T; *Scoped[T] is one.
type Viewer[T any] interface {
	View(ctx context.Context, fn func(T) error) error
}

// ViewAs returns v seen through U, narrower than T: a consumer hands a part
// of what it reads to another (the CSC API's store to the bearer
// middleware). narrow is typically `func(tx csc.Tx) oauth.BearerTx { return tx }`.
func ViewAs[T, U any](v Viewer[T], narrow func(T) U) Viewer[U] {
	return viewAs[T, U]{v: v, narrow: narrow}
}

type viewAs[T, U any] struct {
	v      Viewer[T]
	narrow func(T) U
}

func (a viewAs[T, U]) View(ctx context.Context, fn func(U) error) error {
	return a.v.View(ctx, func(tx T) error { return fn(a.narrow(tx)) })
}

package store

import (
	"context"
	"sync"
)

// Gate counts a backend's running transactions so that Close can wait for
// them, and refuses new ones once closed. The zero Gate is open.
type Gate struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when running drops to zero
	closed  bool
	running int
}

// enter registers a running transaction, or returns closedErr once the
// gate is closed.
func (g *Gate) enter(closedErr error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return closedErr
	}
	g.running++
	return nil
}

// Run runs fn as one running transaction. Without calling fn, it returns
// ctx's error, or closedErr once the gate is closed.
func (g *Gate) Run(ctx context.Context, closedErr error, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := g.enter(closedErr); err != nil {
		return err
	}
	defer g.leave()
	return fn()
}

// leave ends a transaction that enter registered.
func (g *Gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running--; g.running == 0 && g.idle.L != nil {
		g.idle.Broadcast()
	}
}

// Close refuses new transactions and waits until none runs. It reports
// whether this call closed the gate (false: it was closed already).
func (g *Gate) Close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	first := !g.closed
	g.closed = true
	if g.idle.L == nil {
		g.idle.L = &g.mu
	}
	for g.running > 0 {
		g.idle.Wait()
	}
	return first
}

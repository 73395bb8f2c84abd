package store

import "sync"

// Gate counts a backend's running transactions so that Close can wait for
// them, and refuses new ones once closed. The zero Gate is open.
type Gate struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when running drops to zero
	closed  bool
	running int
}

// Enter registers a running transaction, or returns closedErr once the
// gate is closed.
func (g *Gate) Enter(closedErr error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return closedErr
	}
	g.running++
	return nil
}

// Leave ends a transaction that Enter registered.
func (g *Gate) Leave() {
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

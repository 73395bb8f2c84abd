package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a goroutine-safe log sink: tests point a server's slog handler
// (or a child process's output) at it and search the captured lines (for
// secrets, for example). The zero value is ready to use.
type Buffer struct {
	// Keep, when above 0, bounds the buffer to the last Keep bytes written
	// (the output of a member process over a long test).
	Keep int

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if over := b.buf.Len() - b.Keep; b.Keep > 0 && over > 0 {
		b.buf.Next(over)
	}
	return n, err
}

// String returns everything written so far (the last Keep bytes of it).
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

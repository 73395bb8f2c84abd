package logtest

import (
	"strings"
	"testing"
)

// A Buffer with Keep holds the last Keep bytes written, and each Write
// reports all of p written (a child process's pipe copier stops on a
// short write).
func TestBufferKeep(t *testing.T) {
	b := &Buffer{Keep: 8}
	for _, p := range []string{"first\n", "second\n", "third\n"} {
		if n, err := b.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got := b.String(); got != "d\nthird\n" {
		t.Errorf("kept %q, want the last 8 bytes", got)
	}
	var all Buffer
	all.Write([]byte(strings.Repeat("x", 1<<16)))
	if len(all.String()) != 1<<16 {
		t.Errorf("a Buffer without Keep dropped bytes")
	}
}

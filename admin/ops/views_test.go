package ops

import "testing"

// TestBroken: where a report says the log breaks, as `signd audit verify`
// prints it: the entry of chain "" as always, else the entry and its
// chain, or the chain as a whole.
func TestBroken(t *testing.T) {
	for _, tt := range []struct {
		chain string
		seq   uint64
		want  string
	}{
		{"", 7, "entry 7"},
		{"node-1", 7, "entry 7 of chain node-1"},
		{"node-1", 0, "chain node-1"},
	} {
		if got := Broken(tt.chain, tt.seq); got != tt.want {
			t.Errorf("Broken(%q, %d) = %q, want %q", tt.chain, tt.seq, got, tt.want)
		}
	}
}

package store

import "testing"

// TestHasherDummyDoesCheckWork checks that Dummy runs a full argon2id check
// with the Hasher's own parameters, so an unknown user costs what a wrong
// password costs. It compares parameters, not timings: tests never fail on
// timing.
func TestHasherDummyDoesCheckWork(t *testing.T) {
	for _, p := range []Argon2Params{
		{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16},
		{Time: 2, MemoryKiB: 4096, Threads: 2, KeyLen: 32, SaltLen: 16},
	} {
		h, err := NewHasher(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseArgon2Params(h.dummy)
		if err != nil {
			t.Fatalf("dummy hash %q: %v", h.dummy, err)
		}
		if got != p {
			t.Fatalf("dummy hash made with %+v, want %+v", got, p)
		}
		// A check against the dummy fails for any secret, including empty.
		for _, s := range [][]byte{nil, []byte("pw")} {
			if ok, err := CheckPassword(h.dummy, s); ok || err != nil {
				t.Fatalf("CheckPassword(dummy, %q) = %v, %v", s, ok, err)
			}
		}
	}
}

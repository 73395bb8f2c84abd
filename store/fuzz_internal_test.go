package store

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/crypto/argon2"
)

// FuzzParseArgon2id parses stored password and PIN hashes (PHC strings).
// A refusal wraps ErrInvalid; an accepted hash has parameters within the
// bounds (so a hostile record cannot make a check allocate more than 1 GiB
// or run more than 64 passes), re-encodes canonically to the same
// parameters, salt and key, and checks a secret exactly as a recomputed
// argon2id does. A hash made with (small) fuzzed parameters parses back to
// them and checks its own secret and no other.
func FuzzParseArgon2id(f *testing.F) {
	real, _ := HashPassword(Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}, []byte("correct horse"))
	for _, s := range []string{
		real,
		"$argon2id$v=19$m=65536,t=3,p=2$c2FsdHNhbHRzYWx0c2FsdA$MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI",
		"$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$MTIzNDU2Nzg5MDEyMzQ1Ng",
		"$argon2id$v=19$m=4294967295,t=4294967295,p=255$c2FsdHNhbHQ$MTIzNDU2Nzg5MDEyMzQ1Ng",
		"$argon2i$v=19$m=65536,t=3,p=2$c2FsdA$aGFzaA", "$argon2id$v=16$m=8,t=1,p=1$c2FsdHNhbHQ$MTIzNDU2Nzg5MDEyMzQ1Ng",
		"$argon2id$v=19$t=1,m=8,p=1$c2FsdHNhbHQ$MTIzNDU2Nzg5MDEyMzQ1Ng", "$argon2id$v=19$m=08,t=01,p=1$c2FsdHNhbHQ$MTIzNDU2Nzg5MDEyMzQ1Ng==",
		"", "$", "sha256$abc",
	} {
		f.Add(s, []byte("correct horse"), uint8(1), uint8(8), uint8(1), uint8(16), uint8(8))
	}
	f.Fuzz(func(t *testing.T, encoded string, secret []byte, tm, mem, threads, keyLen, saltLen uint8) {
		p, salt, key, err := parseArgon2id(encoded)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || err.Error() == "" {
				t.Fatalf("%q: %v", encoded, err)
			}
			if _, perr := ParseArgon2Params(encoded); perr == nil {
				t.Fatalf("%q: ParseArgon2Params accepts what parseArgon2id refuses", encoded)
			}
		} else {
			if err := p.validate(); err != nil || p.MemoryKiB > argon2MaxMemoryKiB || p.Time > argon2MaxTime {
				t.Fatalf("%q: parameters %+v out of bounds (%v)", encoded, p, err)
			}
			if int(p.KeyLen) != len(key) || int(p.SaltLen) != len(salt) {
				t.Fatalf("%q: %+v with a %d-byte salt and a %d-byte key", encoded, p, len(salt), len(key))
			}
			canon := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", p.MemoryKiB, p.Time, p.Threads,
				base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
			p2, salt2, key2, err := parseArgon2id(canon)
			if err != nil || p2 != p || !bytes.Equal(salt2, salt) || !bytes.Equal(key2, key) {
				t.Fatalf("%q re-encoded as %q: %+v, %v", encoded, canon, p2, err)
			}
			if p.MemoryKiB <= 256 && p.Time <= 2 { // cheap enough to run each time
				want := subtle.ConstantTimeCompare(argon2.IDKey(secret, salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen), key) == 1
				for _, e := range []string{encoded, canon} {
					if ok, err := CheckPassword(e, secret); err != nil || ok != want {
						t.Fatalf("CheckPassword(%q) = %v, %v; argon2id says %v", e, ok, err, want)
					}
				}
			}
		}

		// A fresh hash with small parameters.
		q := Argon2Params{Time: uint32(tm%2) + 1, MemoryKiB: uint32(mem%64) + 8*uint32(threads%2+1), Threads: threads%2 + 1,
			KeyLen: uint32(keyLen%48) + argon2MinKeyLen, SaltLen: uint32(saltLen%24) + argon2MinSaltLen}
		h, err := HashPassword(q, secret)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if got, err := ParseArgon2Params(h); err != nil || got != q {
			t.Fatalf("%q: parameters %+v, want %+v (%v)", h, got, q, err)
		}
		if ok, err := CheckPassword(h, secret); !ok || err != nil {
			t.Fatalf("%q does not check its own secret: %v", h, err)
		}
		if ok, _ := CheckPassword(h, append(bytes.Clone(secret), 'x')); ok {
			t.Fatalf("%q checks another secret", h)
		}
	})
}

package store_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// low keeps argon2 cheap; only TestDefaultArgon2Params uses the defaults.
func low() store.Argon2Params {
	return store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}
}

func TestHashPasswordRoundTrip(t *testing.T) {
	for _, secret := range []string{"", "correct horse battery staple", "123456", "pässwörd ✓", strings.Repeat("x", 4096)} {
		t.Run(secret[:min(len(secret), 12)], func(t *testing.T) {
			enc, err := store.HashPassword(low(), []byte(secret))
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`^\$argon2id\$v=19\$m=64,t=1,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`).MatchString(enc) {
				t.Errorf("encoding %q is not PHC argon2id with raw base64", enc)
			}
			ok, err := store.CheckPassword(enc, []byte(secret))
			if err != nil || !ok {
				t.Errorf("CheckPassword(right secret) = %v, %v", ok, err)
			}
			ok, err = store.CheckPassword(enc, []byte(secret+"x"))
			if err != nil || ok {
				t.Errorf("CheckPassword(wrong secret) = %v, %v", ok, err)
			}
			again, err := store.HashPassword(low(), []byte(secret))
			if err != nil {
				t.Fatal(err)
			}
			if again == enc {
				t.Error("two hashes of the same secret are equal: salt not random")
			}
		})
	}
}

// TestCheckPasswordReferenceVector checks interoperability with the argon2
// reference implementation (phc-winner-argon2 src/test.c, argon2id, v=19,
// t=2, m=2^16, p=1, password "password", salt "somesalt"): parameters come
// from the encoding, not from any Hasher or defaults.
func TestCheckPasswordReferenceVector(t *testing.T) {
	const ref = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
	p, err := store.ParseArgon2Params(ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Argon2Params{Time: 2, MemoryKiB: 65536, Threads: 1, KeyLen: 32, SaltLen: 8}); p != want {
		t.Errorf("ParseArgon2Params = %+v, want %+v", p, want)
	}
	for _, tc := range []struct {
		secret string
		want   bool
	}{{"password", true}, {"Password", false}, {"", false}} {
		ok, err := store.CheckPassword(ref, []byte(tc.secret))
		if err != nil || ok != tc.want {
			t.Errorf("CheckPassword(ref, %q) = %v, %v; want %v", tc.secret, ok, err, tc.want)
		}
	}
}

func TestCheckPasswordOtherParams(t *testing.T) {
	other := store.Argon2Params{Time: 2, MemoryKiB: 128, Threads: 2, KeyLen: 24, SaltLen: 12}
	enc, err := store.HashPassword(other, []byte("pin"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=128,t=2,p=2$") {
		t.Errorf("encoding %q does not carry its parameters", enc)
	}
	if p, err := store.ParseArgon2Params(enc); err != nil || p != other {
		t.Errorf("ParseArgon2Params = %+v, %v; want %+v", p, err, other)
	}
	h, err := store.NewHasher(low())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.Check(enc, []byte("pin")); err != nil || !ok {
		t.Errorf("Hasher with other params: Check = %v, %v", ok, err)
	}
	if !h.NeedsRehash(enc) {
		t.Error("NeedsRehash(other params) = false")
	}
	mine, err := h.Hash([]byte("pin"))
	if err != nil {
		t.Fatal(err)
	}
	if h.NeedsRehash(mine) {
		t.Error("NeedsRehash(own params) = true")
	}
	if !h.NeedsRehash("garbage") {
		t.Error("NeedsRehash(malformed) = false")
	}
}

func TestCheckPasswordMalformed(t *testing.T) {
	good, err := store.HashPassword(low(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(good, "$") // "", argon2id, v=19, params, salt, hash
	salt, hash := f[4], f[5]
	for _, tc := range []struct{ name, enc string }{
		{"empty", ""},
		{"plaintext", "hunter2"},
		{"argon2i", "$argon2i$v=19$m=64,t=1,p=1$" + salt + "$" + hash},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"version 16", "$argon2id$v=16$m=64,t=1,p=1$" + salt + "$" + hash},
		{"no version", "$argon2id$m=64,t=1,p=1$" + salt + "$" + hash},
		{"params out of order", "$argon2id$v=19$t=1,m=64,p=1$" + salt + "$" + hash},
		{"missing param", "$argon2id$v=19$m=64,t=1$" + salt + "$" + hash},
		{"extra param", "$argon2id$v=19$m=64,t=1,p=1,k=2$" + salt + "$" + hash},
		{"non-numeric", "$argon2id$v=19$m=sixty,t=1,p=1$" + salt + "$" + hash},
		{"negative", "$argon2id$v=19$m=-64,t=1,p=1$" + salt + "$" + hash},
		{"plus sign", "$argon2id$v=19$m=+64,t=1,p=1$" + salt + "$" + hash},
		{"p overflows uint8", "$argon2id$v=19$m=4096,t=1,p=256$" + salt + "$" + hash},
		{"m overflows uint32", "$argon2id$v=19$m=4294967296,t=1,p=1$" + salt + "$" + hash},
		{"t zero", "$argon2id$v=19$m=64,t=0,p=1$" + salt + "$" + hash},
		{"p zero", "$argon2id$v=19$m=64,t=1,p=0$" + salt + "$" + hash},
		{"m below 8p", "$argon2id$v=19$m=8,t=1,p=2$" + salt + "$" + hash},
		{"m above 1 GiB (refused before allocating)", "$argon2id$v=19$m=4000000,t=1,p=1$" + salt + "$" + hash},
		{"t above bound", "$argon2id$v=19$m=64,t=1000000,p=1$" + salt + "$" + hash},
		{"bad salt base64", "$argon2id$v=19$m=64,t=1,p=1$!!!$" + hash},
		{"padded base64", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "==$" + hash},
		{"short salt", "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$" + hash},
		{"short hash", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$c2hvcnQ"},
		{"empty hash", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$"},
		{"trailing field", good + "$x"},
		{"no leading dollar", strings.TrimPrefix(good, "$")},
		{"white space", " " + good},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := store.CheckPassword(tc.enc, []byte("pw"))
			if err == nil || ok {
				t.Fatalf("CheckPassword(%q) = %v, %v; want an error", tc.enc, ok, err)
			}
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestHashPasswordBadParams(t *testing.T) {
	for _, p := range []store.Argon2Params{
		{},
		{Time: 0, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16},
		{Time: 1, MemoryKiB: 64, Threads: 0, KeyLen: 32, SaltLen: 16},
		{Time: 1, MemoryKiB: 15, Threads: 2, KeyLen: 32, SaltLen: 16},
		{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 8, SaltLen: 16},
		{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 4},
		{Time: 1, MemoryKiB: 2 << 20, Threads: 1, KeyLen: 32, SaltLen: 16},
	} {
		if _, err := store.HashPassword(p, []byte("x")); err == nil {
			t.Errorf("HashPassword(%+v) succeeded", p)
		}
		if _, err := store.NewHasher(p); err == nil {
			t.Errorf("NewHasher(%+v) succeeded", p)
		}
	}
}

func TestHasher(t *testing.T) {
	h, err := store.NewHasher(low())
	if err != nil {
		t.Fatal(err)
	}
	if h.Params() != low() {
		t.Errorf("Params() = %+v", h.Params())
	}
	enc, err := h.Hash([]byte("123456"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.Check(enc, []byte("123456")); err != nil || !ok {
		t.Errorf("Check(right) = %v, %v", ok, err)
	}
	if ok, err := h.Check(enc, []byte("654321")); err != nil || ok {
		t.Errorf("Check(wrong) = %v, %v", ok, err)
	}
	if _, err := h.Check("garbage", []byte("123456")); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Check(malformed) error = %v", err)
	}
	h.Dummy(nil)
	h.Dummy([]byte("anything"))
}

// TestDefaultArgon2Params hashes once with the production parameters and
// logs the cost quoted in DefaultArgon2Params' comment.
func TestDefaultArgon2Params(t *testing.T) {
	p := store.DefaultArgon2Params()
	if p.Time < 2 || p.MemoryKiB < 19*1024 || p.Threads < 1 || p.KeyLen < 32 || p.SaltLen < 16 {
		t.Errorf("defaults %+v are below the OWASP minimum", p)
	}
	start := time.Now()
	enc, err := store.HashPassword(p, []byte("correct horse"))
	hashTime := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=65536,t=3,p=2$") {
		t.Errorf("encoding %q", enc)
	}
	start = time.Now()
	ok, err := store.CheckPassword(enc, []byte("correct horse"))
	checkTime := time.Since(start)
	if err != nil || !ok {
		t.Errorf("CheckPassword = %v, %v", ok, err)
	}
	t.Logf("defaults %+v: hash %v, check %v", p, hashTime, checkTime)
}

func TestHashSecret(t *testing.T) {
	secret := "kq3Jx6dQdWb1oJmVbZx0e5r9sA2Yt7uH4gF8pL1nC3M" // 256 bits, base64url
	enc := store.HashSecret(secret)
	if !regexp.MustCompile(`^sha256\$[A-Za-z0-9_-]{43}$`).MatchString(enc) {
		t.Errorf("HashSecret = %q", enc)
	}
	if strings.Contains(enc, secret) {
		t.Error("the hash contains the secret")
	}
	if !store.CheckSecret(enc, secret) {
		t.Error("CheckSecret(right) = false")
	}
	// Secrets differing in the first and in the last byte are both refused
	// (the comparison is crypto/subtle's constant-time one over the full
	// digest).
	for _, wrong := range []string{"X" + secret[1:], secret[:len(secret)-1] + "X", "", secret + " "} {
		if store.CheckSecret(enc, wrong) {
			t.Errorf("CheckSecret(wrong %q) = true", wrong)
		}
	}
	digest := strings.TrimPrefix(enc, "sha256$")
	for _, tc := range []struct{ name, enc string }{
		{"empty", ""},
		{"prefix only", "sha256$"},
		{"plaintext", secret},
		{"other algorithm", "sha1$" + digest},
		{"upper-case prefix", "SHA256$" + digest},
		{"padded", enc + "="},
		{"std base64 alphabet", "sha256$" + strings.NewReplacer("-", "+", "_", "/").Replace(digest) + "+/"},
		{"truncated", enc[:len(enc)-2]},
		{"too long", enc + "AAAA"},
		{"bad base64", "sha256$!!!!"},
		{"argon2 hash", "$argon2id$v=19$m=64,t=1,p=1$c29tZXNhbHQ$" + digest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if store.CheckSecret(tc.enc, secret) {
				t.Errorf("CheckSecret(%q) = true", tc.enc)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 1000 {
		id, err := store.NewID()
		if err != nil {
			t.Fatal(err)
		}
		if !re.MatchString(id) {
			t.Fatalf("NewID = %q, want 26 lowercase base32 characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
	}
}

// BenchmarkHashPassword measures one argon2id hash with the default
// parameters (the figure quoted in DefaultArgon2Params' comment).
func BenchmarkHashPassword(b *testing.B) {
	p := store.DefaultArgon2Params()
	for b.Loop() {
		if _, err := store.HashPassword(p, []byte("correct horse")); err != nil {
			b.Fatal(err)
		}
	}
}

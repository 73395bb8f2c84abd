package store

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2Params are the argon2id cost parameters of a new password or PIN
// hash. Checking a hash always uses the parameters encoded in it.
type Argon2Params struct {
	Time      uint32 // passes over memory (t), >= 1
	MemoryKiB uint32 // memory in KiB (m), >= 8*Threads
	Threads   uint8  // parallelism (p), >= 1
	KeyLen    uint32 // hash length in bytes, 16–1024
	SaltLen   uint32 // salt length in bytes, 8–1024
}

// Bounds on parameters, both for new hashes and for those parsed from a stored
// encoding (so a corrupt or hostile record cannot make a check allocate
// unbounded memory or run unbounded passes).
const (
	argon2MaxMemoryKiB = 1 << 20 // 1 GiB
	argon2MaxTime      = 64
	argon2MinKeyLen    = 16
	argon2MinSaltLen   = 8
	argon2MaxLen       = 1024
)

// DefaultArgon2Params returns t=3, m=64 MiB, p=2, a 32-byte hash and a
// 16-byte salt: RFC 9106 §4's second recommended option (with p=2), well
// above the OWASP Password Storage Cheat Sheet minimum (m=19 MiB, t=2, p=1).
//
// Measured cost of one hash (a check costs the same): about 220 ms per hash
// on the 2-vCPU Intel Xeon VM signd was developed on (go test -run XXX -bench
// HashPassword ./store; 220–370 ms over runs on a shared host). Each hash
// holds 64 MiB for that time, so N concurrent logins need N×64 MiB: callers
// should bound concurrent checks.
func DefaultArgon2Params() Argon2Params {
	return Argon2Params{Time: 3, MemoryKiB: 64 * 1024, Threads: 2, KeyLen: 32, SaltLen: 16}
}

func (p Argon2Params) validate() error {
	switch {
	case p.Time < 1 || p.Time > argon2MaxTime:
		return fmt.Errorf("argon2: time %d out of range 1–%d", p.Time, argon2MaxTime)
	case p.Threads < 1:
		return errors.New("argon2: threads must be at least 1")
	case p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > argon2MaxMemoryKiB:
		return fmt.Errorf("argon2: memory %d KiB out of range %d–%d", p.MemoryKiB, 8*uint32(p.Threads), argon2MaxMemoryKiB)
	case p.KeyLen < argon2MinKeyLen || p.KeyLen > argon2MaxLen:
		return fmt.Errorf("argon2: key length %d out of range %d–%d", p.KeyLen, argon2MinKeyLen, argon2MaxLen)
	case p.SaltLen < argon2MinSaltLen || p.SaltLen > argon2MaxLen:
		return fmt.Errorf("argon2: salt length %d out of range %d–%d", p.SaltLen, argon2MinSaltLen, argon2MaxLen)
	}
	return nil
}

// HashPassword hashes a password or PIN with argon2id and a fresh random salt,
// returning the PHC string $argon2id$v=19$m=<KiB>,t=<time>,p=<threads>$<salt>$<hash>
// (salt and hash in standard base64 without padding).
func HashPassword(p Argon2Params, secret []byte) (string, error) {
	if err := p.validate(); err != nil {
		return "", err
	}
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("argon2: salt: %w", err)
	}
	key := argon2.IDKey(secret, salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// CheckPassword reports whether secret matches the PHC-encoded argon2id hash,
// comparing in constant time with the parameters taken from the encoding. A
// malformed encoding (or parameters out of bounds) is an error.
func CheckPassword(encoded string, secret []byte) (bool, error) {
	p, salt, want, err := parseArgon2id(encoded)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey(secret, salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen)
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// ParseArgon2Params returns the parameters encoded in a PHC argon2id hash,
// for instance to decide whether a stored hash should be upgraded.
func ParseArgon2Params(encoded string) (Argon2Params, error) {
	p, _, _, err := parseArgon2id(encoded)
	return p, err
}

// malformed wraps ErrInvalid: a stored hash that cannot be parsed is an
// invalid record.
func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: malformed argon2id hash: "+format, append([]any{ErrInvalid}, a...)...)
}

func parseArgon2id(encoded string) (p Argon2Params, salt, key []byte, err error) {
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, hash
	f := strings.Split(encoded, "$")
	if len(f) != 6 || f[0] != "" || f[1] != "argon2id" {
		return p, nil, nil, malformed("not $argon2id$v=..$m=..,t=..,p=..$salt$hash")
	}
	if f[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, malformed("unsupported version %q", f[2])
	}
	var m, t, threads uint64
	params := strings.Split(f[3], ",")
	if len(params) != 3 {
		return p, nil, nil, malformed("parameters %q", f[3])
	}
	for i, want := range []struct {
		name string
		dst  *uint64
		bits int
	}{{"m", &m, 32}, {"t", &t, 32}, {"p", &threads, 8}} {
		v, ok := strings.CutPrefix(params[i], want.name+"=")
		if !ok {
			return p, nil, nil, malformed("parameters %q", f[3])
		}
		n, err := strconv.ParseUint(v, 10, want.bits)
		if err != nil {
			return p, nil, nil, malformed("parameters %q", f[3])
		}
		*want.dst = n
	}
	if salt, err = base64.RawStdEncoding.DecodeString(f[4]); err != nil {
		return p, nil, nil, malformed("salt")
	}
	if key, err = base64.RawStdEncoding.DecodeString(f[5]); err != nil {
		return p, nil, nil, malformed("hash")
	}
	p = Argon2Params{
		Time: uint32(t), MemoryKiB: uint32(m), Threads: uint8(threads),
		KeyLen: uint32(len(key)), SaltLen: uint32(len(salt)),
	}
	if err := p.validate(); err != nil {
		return p, nil, nil, malformed("%v", err)
	}
	return p, salt, key, nil
}

// Hasher hashes and checks passwords or PINs with fixed parameters. Its
// Dummy method costs as much as a Check, so that a login for an unknown user
// (or a user without a PIN) takes as long as one for a known user. A Hasher
// is safe for concurrent use.
type Hasher struct {
	params Argon2Params
	dummy  string
}

// NewHasher validates p and precomputes the dummy hash (one argon2id run).
func NewHasher(p Argon2Params) (*Hasher, error) {
	var random [32]byte
	if _, err := rand.Read(random[:]); err != nil {
		return nil, fmt.Errorf("argon2: %w", err)
	}
	dummy, err := HashPassword(p, random[:])
	if err != nil {
		return nil, err
	}
	return &Hasher{params: p, dummy: dummy}, nil
}

// Params returns the parameters new hashes are made with.
func (h *Hasher) Params() Argon2Params { return h.params }

// Hash hashes secret with h's parameters (see HashPassword).
func (h *Hasher) Hash(secret []byte) (string, error) { return HashPassword(h.params, secret) }

// Check is CheckPassword: the parameters come from encoded, not from h.
func (h *Hasher) Check(encoded string, secret []byte) (bool, error) {
	return CheckPassword(encoded, secret)
}

// Dummy burns the same time as a Check with h's parameters and discards the
// result.
func (h *Hasher) Dummy(secret []byte) {
	_, _ = CheckPassword(h.dummy, secret)
}

// NeedsRehash reports whether encoded was made with parameters other than
// h's (or is malformed), so the caller can re-hash after a successful check.
func (h *Hasher) NeedsRehash(encoded string) bool {
	p, err := ParseArgon2Params(encoded)
	return err != nil || p != h.params
}

const secretPrefix = "sha256$"

// HashSecret fingerprints a high-entropy secret (an OAuth client secret of at
// least 256 random bits) as "sha256$" + base64url(SHA-256(secret)) without
// padding. A slow hash adds nothing for such secrets; never use this for
// passwords or PINs.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return secretPrefix + base64.RawURLEncoding.EncodeToString(sum[:])
}

// CheckSecret reports whether secret matches a HashSecret encoding, in
// constant time with respect to the secret. A malformed encoding gives false.
func CheckSecret(encoded, secret string) bool {
	rest, ok := strings.CutPrefix(encoded, secretPrefix)
	if !ok {
		return false
	}
	want, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(want) != sha256.Size {
		return false
	}
	got := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(got[:], want) == 1
}

// validSecretHash reports whether s is a well-formed HashSecret encoding.
func validSecretHash(s string) bool {
	rest, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil && len(b) == sha256.Size
}

// NewID returns 128 random bits as 26 characters of lowercase base32 (no
// padding), for user IDs, credential IDs and proof IDs.
func NewID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: random ID: %w", err)
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])), nil
}

// ProofDigest returns the lowercase hex SHA-256 of proof content, as stored
// in ProofRef.SHA256.
func ProofDigest(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// RecordProof records the ProofRef of p in u.Proofs, replacing one with the
// same ID, and returns it: the bookkeeping every backend's Tx.PutProof does
// before it stores the content.
func RecordProof(u *User, p Proof) ProofRef {
	ref := ProofRef{ID: p.ID, ContentType: p.ContentType, Size: int64(len(p.Content)), SHA256: ProofDigest(p.Content)}
	if i := slices.IndexFunc(u.Proofs, func(r ProofRef) bool { return r.ID == ref.ID }); i >= 0 {
		u.Proofs[i] = ref
	} else {
		u.Proofs = append(u.Proofs, ref)
	}
	return ref
}

package softtoken

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/signd/signd/hsm"
)

// Options configure New.
type Options struct {
	// Sessions bounds how many calls run at once (the session pool of
	// *hsm.Token); 0 means no bound.
	Sessions int
	// AcquireTimeout is the longest wait for a free session; 0 means 2 s,
	// the default of hsm.Config.
	AcquireTimeout time.Duration
}

// Operation names, for Inject, FailOnce, FailAlways, Hook and Calls.
const (
	OpGenerateRSA = "GenerateRSA"
	OpGenerateEC  = "GenerateEC"
	OpKeys        = "Keys"
	OpKey         = "Key"
	OpCheckKey    = "CheckKey"
	OpDestroyKey  = "DestroyKey"
	OpSignDigest  = "SignDigest"
)

var operations = []string{OpGenerateRSA, OpGenerateEC, OpKeys, OpKey, OpCheckKey, OpDestroyKey, OpSignDigest}

const (
	idLen                 = 16  // CKA_ID length GenerateRSA chooses, as hsm does
	maxLabelLen           = 128 // label bound, as hsm has
	defaultAcquireTimeout = 2 * time.Second
)

// Token is an in-memory RSA and ECDSA signing token. It is safe for
// concurrent use.
type Token struct {
	sessions       chan struct{} // nil: no bound
	acquireTimeout time.Duration

	mu     sync.Mutex
	keys   map[string]crypto.Signer // *rsa.PrivateKey or *ecdsa.PrivateKey, by string(ID)
	labels map[string]string        // by string(ID)
	closed bool
	faults
}

// New returns an empty token that injects nothing until told to.
func New(opts Options) *Token {
	t := &Token{
		acquireTimeout: opts.AcquireTimeout,
		keys:           make(map[string]crypto.Signer),
		labels:         make(map[string]string),
		faults:         newFaults(),
	}
	if t.acquireTimeout <= 0 {
		t.acquireTimeout = defaultAcquireTimeout
	}
	if opts.Sessions > 0 {
		t.sessions = make(chan struct{}, opts.Sessions)
	}
	return t
}

// Available reports whether calls can start: false after Close and from
// the first call that found the token gone until SetGone(false).
func (t *Token) Available() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.closed && !t.down
}

// Close makes every later call fail with hsm.ErrClosed.
func (t *Token) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	return nil
}

// GenerateRSA generates an RSA key pair of bits (2048, 3072 or 4096)
// labelled label, with a random 16-byte ID. A label already in use is
// refused with hsm.ErrLabelExists.
func (t *Token) GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error) {
	switch bits {
	case 2048, 3072, 4096:
	default:
		return nil, fmt.Errorf("softtoken: generate key: %w: RSA-%d (2048, 3072 or 4096 bits)", hsm.ErrUnsupportedAlgorithm, bits)
	}
	return t.generate(ctx, OpGenerateRSA, label, func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, bits) })
}

// GenerateEC generates an ECDSA key pair on curve (P-256, P-384 or P-521)
// as GenerateRSA does.
func (t *Token) GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*hsm.KeyInfo, error) {
	if curve != elliptic.P256() && curve != elliptic.P384() && curve != elliptic.P521() {
		return nil, fmt.Errorf("softtoken: generate key: %w: curve %v (P-256, P-384 or P-521)", hsm.ErrUnsupportedAlgorithm, curve)
	}
	return t.generate(ctx, OpGenerateEC, label, func() (crypto.Signer, error) { return ecdsa.GenerateKey(curve, rand.Reader) })
}

func (t *Token) generate(ctx context.Context, op, label string, gen func() (crypto.Signer, error)) (*hsm.KeyInfo, error) {
	if err := checkLabel(label); err != nil {
		return nil, err
	}
	done, err := t.begin(ctx, op, nil)
	if err != nil {
		return nil, err
	}
	defer done()
	if t.labelInUse(label) {
		return nil, fmt.Errorf("softtoken: generate key: %w: %q", hsm.ErrLabelExists, label)
	}
	id := make([]byte, idLen)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("softtoken: generate key: %w", err)
	}
	priv, err := gen()
	if err != nil {
		return nil, fmt.Errorf("softtoken: generate key: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.labelInUseLocked(label) { // a concurrent call took it meanwhile
		return nil, fmt.Errorf("softtoken: generate key: %w: %q", hsm.ErrLabelExists, label)
	}
	t.keys[string(id)], t.labels[string(id)] = priv, label
	return &hsm.KeyInfo{ID: id, Label: label, Bits: hsm.KeyBits(priv.Public()), Public: priv.Public()}, nil
}

func checkLabel(label string) error {
	switch {
	case label == "":
		return errors.New("softtoken: empty key label")
	case len(label) > maxLabelLen:
		return fmt.Errorf("softtoken: key label longer than %d bytes", maxLabelLen)
	case !utf8.ValidString(label):
		return errors.New("softtoken: key label is not UTF-8")
	}
	return nil
}

func (t *Token) labelInUse(label string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.labelInUseLocked(label)
}

func (t *Token) labelInUseLocked(label string) bool {
	for _, l := range t.labels {
		if l == label {
			return true
		}
	}
	return false
}

// Keys lists the keys by label, then ID.
func (t *Token) Keys(ctx context.Context) ([]hsm.KeyInfo, error) {
	done, err := t.begin(ctx, OpKeys, nil)
	if err != nil {
		return nil, err
	}
	defer done()
	t.mu.Lock()
	out := make([]hsm.KeyInfo, 0, len(t.keys))
	for id, k := range t.keys {
		out = append(out, hsm.KeyInfo{ID: []byte(id), Label: t.labels[id], Bits: hsm.KeyBits(k.Public()), Public: k.Public()})
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b hsm.KeyInfo) int {
		if c := strings.Compare(a.Label, b.Label); c != 0 {
			return c
		}
		return bytes.Compare(a.ID, b.ID)
	})
	return out, nil
}

// lookup returns the key with ID id, or hsm.ErrKeyNotFound.
func (t *Token) lookup(id []byte) (crypto.Signer, string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.keys[string(id)]; ok {
		return k, t.labels[string(id)], nil
	}
	return nil, "", fmt.Errorf("%w: no key with ID %x on the software token", hsm.ErrKeyNotFound, id)
}

// DestroyKey destroys the key pair with ID id, or fails with
// hsm.ErrKeyNotFound.
func (t *Token) DestroyKey(ctx context.Context, id []byte) error {
	if len(id) == 0 {
		return fmt.Errorf("softtoken: destroy key: %w: empty key ID", hsm.ErrKeyNotFound)
	}
	done, err := t.begin(ctx, OpDestroyKey, nil)
	if err != nil {
		return err
	}
	defer done()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.keys[string(id)]; !ok {
		return fmt.Errorf("softtoken: destroy key: %w: no key with ID %x", hsm.ErrKeyNotFound, id)
	}
	delete(t.keys, string(id))
	delete(t.labels, string(id))
	return nil
}

// CheckKey reports whether a signature with key id could be made now,
// without making one: the token is available, a session is free (else
// hsm.ErrBusy) and the key exists (else hsm.ErrKeyNotFound).
func (t *Token) CheckKey(ctx context.Context, id []byte) error {
	done, err := t.begin(ctx, OpCheckKey, id)
	if err != nil {
		return err
	}
	defer done()
	_, _, err = t.lookup(id)
	if err != nil {
		return fmt.Errorf("softtoken: check key: %w", err)
	}
	return nil
}

// Key returns the signer for the key with ID id.
func (t *Token) Key(ctx context.Context, id []byte) (*hsm.Key, error) {
	done, err := t.begin(ctx, OpKey, id)
	if err != nil {
		return nil, err
	}
	defer done()
	priv, label, err := t.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("softtoken: load key: %w", err)
	}
	return hsm.NewKey(t, id, label, priv.Public()), nil
}

// supportedHashes are the hashes SignDigest accepts, as hsm's. crypto/rsa
// builds the DigestInfo (RFC 8017 §9.2) for each of them.
var supportedHashes = []crypto.Hash{crypto.SHA256, crypto.SHA384, crypto.SHA512}

// SignDigest signs digest, a hash of hash, with the key whose ID is id in
// the key's plain scheme: RSA PKCS#1 v1.5 over a DigestInfo, or ECDSA
// (DER). It is SignDigestOpts with opts hash.
func (t *Token) SignDigest(ctx context.Context, id []byte, hash crypto.Hash, digest []byte) ([]byte, error) {
	return t.SignDigestOpts(ctx, id, hash, digest)
}

// SignDigestOpts signs as hsm.Token.SignDigestOpts does: RSA PKCS#1 v1.5
// (opts a crypto.Hash) or RSASSA-PSS with a salt of the hash's length
// (opts *rsa.PSSOptions) for an RSA key, ECDSA with a DER signature for an
// EC key. The hash must be SHA-256, SHA-384 or SHA-512 and PSS only on an
// RSA key (else hsm.ErrUnsupportedAlgorithm), digest exactly the hash's
// size (else hsm.ErrBadDigest). Every signature is verified before it is
// returned. Every error satisfies hsm.NotSigned unless an injected fault
// says otherwise (Fault.Signed) or the signature failed verification.
func (t *Token) SignDigestOpts(ctx context.Context, id []byte, opts crypto.SignerOpts, digest []byte) ([]byte, error) {
	hash, salt, err := checkSign(opts, digest)
	if err != nil {
		return nil, hsm.MarkNotSigned(err)
	}
	done, err := t.beginSign(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return t.sign(id, hash, salt, digest)
}

// beginSign begins a signing call as begin does. Its error is what the
// call returns: the fault's own when the fault says the signature was made
// (Fault.Signed), otherwise marked as no signature made.
func (t *Token) beginSign(ctx context.Context) (func(), error) {
	done, err := t.begin(ctx, OpSignDigest, nil)
	if err != nil {
		var s *signedError
		if errors.As(err, &s) {
			return nil, s.err
		}
		return nil, hsm.MarkNotSigned(err)
	}
	return done, nil
}

// SignDigests signs as hsm.Token.SignDigests does: each of digests in
// turn, as SignDigestOpts, while holding one session. Each signature is one
// SignDigest call for Inject, Hook and Calls, so a fault can hit signature
// k of N. An error satisfies hsm.NotSigned only when no signature of the
// batch was made.
func (t *Token) SignDigests(ctx context.Context, id []byte, opts crypto.SignerOpts, digests [][]byte) ([][]byte, error) {
	if len(digests) == 0 {
		return nil, hsm.MarkNotSigned(fmt.Errorf("softtoken: sign: %w: no digest given", hsm.ErrBadDigest))
	}
	var hash crypto.Hash
	var salt int
	for i, digest := range digests {
		var err error
		if hash, salt, err = checkSign(opts, digest); err != nil {
			return nil, hsm.MarkNotSigned(fmt.Errorf("digest %d: %w", i, err))
		}
	}
	done, err := t.beginSign(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	sigs := make([][]byte, 0, len(digests))
	for i, digest := range digests {
		if i > 0 {
			if err := t.next(OpSignDigest); err != nil {
				var s *signedError
				if errors.As(err, &s) {
					err = s.err
				}
				return nil, fmt.Errorf("%w (after %d of %d signatures)", err, i, len(digests))
			}
		}
		sig, err := t.sign(id, hash, salt, digest)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			if hsm.NotSigned(err) {
				err = errors.Unwrap(err) // signatures of the batch exist
			}
			return nil, fmt.Errorf("%w (after %d of %d signatures)", err, i, len(digests))
		}
		sigs = append(sigs, sig)
	}
	return sigs, nil
}

// checkSign checks opts and digest as hsm does before the token is asked
// anything. It returns the hash and, for RSASSA-PSS, the salt length (0
// otherwise).
func checkSign(opts crypto.SignerOpts, digest []byte) (crypto.Hash, int, error) {
	if opts == nil {
		return 0, 0, fmt.Errorf("softtoken: sign: %w: no hash given", hsm.ErrUnsupportedAlgorithm)
	}
	hash := opts.HashFunc()
	if !slices.Contains(supportedHashes, hash) {
		return 0, 0, fmt.Errorf("softtoken: sign: %w: hash %v (SHA-256, SHA-384 or SHA-512)", hsm.ErrUnsupportedAlgorithm, hash)
	}
	salt := 0
	if pss, isPSS := opts.(*rsa.PSSOptions); isPSS {
		if salt = pss.SaltLength; salt == rsa.PSSSaltLengthEqualsHash {
			salt = hash.Size()
		}
		if salt < hash.Size() {
			return 0, 0, fmt.Errorf("softtoken: sign: %w: RSA-PSS salt length %d (only the hash length, %d, or the key's maximum)", hsm.ErrUnsupportedAlgorithm, pss.SaltLength, hash.Size())
		}
	}
	if len(digest) != hash.Size() {
		return 0, 0, fmt.Errorf("softtoken: sign: %w: %d bytes for %v, want %d", hsm.ErrBadDigest, len(digest), hash, hash.Size())
	}
	return hash, salt, nil
}

// sign signs digest with the key id on a session already held, with
// RSASSA-PSS when salt is not 0. Its errors satisfy hsm.NotSigned unless
// the signature failed verification.
func (t *Token) sign(id []byte, hash crypto.Hash, salt int, digest []byte) ([]byte, error) {
	isPSS := salt != 0
	priv, _, err := t.lookup(id)
	if err != nil {
		return nil, hsm.MarkNotSigned(fmt.Errorf("softtoken: sign: %w", err))
	}
	var sig []byte
	switch k := priv.(type) {
	case *rsa.PrivateKey:
		if isPSS {
			if maxSalt := hsm.MaxPSSSaltLength(&k.PublicKey, hash); salt != hash.Size() && salt != maxSalt {
				return nil, hsm.MarkNotSigned(fmt.Errorf("softtoken: sign: %w: RSA-PSS salt length %d (only the hash length, %d, or the key's maximum, %d)", hsm.ErrUnsupportedAlgorithm, salt, hash.Size(), maxSalt))
			}
			pssOpts := &rsa.PSSOptions{SaltLength: salt, Hash: hash}
			if sig, err = rsa.SignPSS(rand.Reader, k, hash, digest, pssOpts); err == nil {
				err = rsa.VerifyPSS(&k.PublicKey, hash, digest, sig, pssOpts)
			}
			break
		}
		if sig, err = rsa.SignPKCS1v15(nil, k, hash, digest); err == nil {
			err = rsa.VerifyPKCS1v15(&k.PublicKey, hash, digest, sig)
		}
	case *ecdsa.PrivateKey:
		if isPSS {
			return nil, hsm.MarkNotSigned(fmt.Errorf("softtoken: sign: %w: RSA-PSS with an EC key", hsm.ErrUnsupportedAlgorithm))
		}
		if sig, err = ecdsa.SignASN1(rand.Reader, k, digest); err == nil && !ecdsa.VerifyASN1(&k.PublicKey, digest, sig) {
			err = errors.New("ECDSA verification failed")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("softtoken: sign: %w", err)
	}
	return sig, nil
}

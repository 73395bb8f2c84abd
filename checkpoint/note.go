package checkpoint

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/signd/signd/store"
)

// Errors a checkpoint fails with; each message says more.
var (
	// ErrMalformed: not a signed note, or its text is not a checkpoint
	// body signd would sign.
	ErrMalformed = errors.New("malformed checkpoint")
	// ErrSignature: no valid signature of the given key: another key
	// signed it, or the text was changed after signing.
	ErrSignature = errors.New("checkpoint signature does not verify")
	// ErrOrigin: the checkpoint is of another log.
	ErrOrigin = errors.New("checkpoint of another log")
	// ErrKey: a verifier key or audit key signd cannot use.
	ErrKey = errors.New("unusable audit key")
)

// Signature type bytes of C2SP signed-note §Signature types.
const (
	sigEd25519 = 0x01 // Ed25519 over the note text
	sigECDSA   = 0x02 // ECDSA over SHA-256 of the note text, DER; the key ID is SHA-256(SPKI)[:4]
)

// MaxNote bounds a checkpoint note signd reads: a few hundred bytes in
// practice.
const MaxNote = 16 << 10

// timeLine starts the extension line that carries the checkpoint's time,
// chainLine each line of a checkpoint of several chains.
const (
	timeLine  = "time "
	chainLine = "chain "
)

// Checkpoint is the body of a C2SP tlog-checkpoint for the audit log.
// Hash is the digest of entry Size of the hash chain (store.AuditEntry),
// not a Merkle tree root: see the package documentation. A checkpoint of
// a log of several chains (one per node of a cluster) lists them in
// Chains; Size is then their entries together and Hash the digest of
// their heads (store.AuditHeadsDigest).
type Checkpoint struct {
	Origin string
	Size   uint64 // entries 1..Size are covered (of all chains together)
	Hash   []byte // the Digest of entry Size, 32 bytes (the heads' digest)
	Time   time.Time
	// Chains are the chains covered, by name ("" first), each with its
	// size and the digest of its last entry; nil for a log of chain ""
	// alone, whose checkpoint has no chain lines.
	Chains []store.AuditChainHead
}

// Body is the note text: origin, size, base64 hash, then one extension
// line "time <RFC 3339 UTC>" when Time is set and one extension line
// "chain <bucket> <size> <base64 head>" per chain of Chains, each ending
// in a newline.
func (c *Checkpoint) Body() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Hash))
	if !c.Time.IsZero() {
		b.WriteString(timeLine + c.Time.UTC().Format(time.RFC3339) + "\n")
	}
	for _, h := range c.Chains {
		fmt.Fprintf(&b, "%s%s %d %s\n", chainLine, store.AuditChainBucket(h.Chain), h.Size, base64.StdEncoding.EncodeToString(h.Head))
	}
	return b.String()
}

// checkChains checks that the chain lines of c add up to its size and
// hash, in chain order, each chain once and not empty, and that they are
// more than chain "" alone (which has the plain form).
func (c *Checkpoint) checkChains() error {
	if c.Chains == nil {
		return nil
	}
	if len(c.Chains) == 1 && c.Chains[0].Chain == "" {
		return fmt.Errorf("%w: a checkpoint of chain \"\" alone has no chain lines", ErrMalformed)
	}
	var size uint64
	for i, h := range c.Chains {
		if h.Chain != "" {
			if err := store.CheckAuditChain(h.Chain); err != nil {
				return fmt.Errorf("%w: %v", ErrMalformed, err)
			}
		}
		if i > 0 && h.Chain <= c.Chains[i-1].Chain {
			return fmt.Errorf("%w: chain lines out of order (%q after %q)", ErrMalformed, h.Chain, c.Chains[i-1].Chain)
		}
		if h.Size == 0 || len(h.Head) != sha256.Size {
			return fmt.Errorf("%w: chain %q of size %d with a head of %d bytes", ErrMalformed, h.Chain, h.Size, len(h.Head))
		}
		if size+h.Size < size {
			return fmt.Errorf("%w: chain sizes overflow", ErrMalformed)
		}
		size += h.Size
	}
	if size != c.Size {
		return fmt.Errorf("%w: the chains hold %d entries, the size line says %d", ErrMalformed, size, c.Size)
	}
	if !bytes.Equal(store.AuditHeadsDigest(c.Chains), c.Hash) {
		return fmt.Errorf("%w: the hash is not the digest of the chain lines", ErrMalformed)
	}
	return nil
}

// parseChainLine parses "chain <bucket> <size> <base64 head>".
func parseChainLine(l string) (store.AuditChainHead, error) {
	f := strings.Split(strings.TrimPrefix(l, chainLine), " ")
	if len(f) != 3 {
		return store.AuditChainHead{}, fmt.Errorf("%w: chain line %q is not \"chain <bucket> <size> <base64 head>\"", ErrMalformed, l)
	}
	var h store.AuditChainHead
	switch {
	case f[0] == "audit":
	case strings.HasPrefix(f[0], "audit.") && len(f[0]) > len("audit."):
		h.Chain = strings.TrimPrefix(f[0], "audit.")
	default:
		return h, fmt.Errorf("%w: chain line %q: %q is not an audit chain's bucket", ErrMalformed, l, f[0])
	}
	size, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != f[1] {
		return h, fmt.Errorf("%w: chain line %q: size %q is not a decimal number without leading zeros", ErrMalformed, l, f[1])
	}
	head, err := base64.StdEncoding.DecodeString(f[2])
	if err != nil || len(head) != sha256.Size || base64.StdEncoding.EncodeToString(head) != f[2] {
		return h, fmt.Errorf("%w: chain line %q: head is not the base64 of 32 bytes", ErrMalformed, l)
	}
	h.Size, h.Head = size, head
	return h, nil
}

// ParseBody parses a checkpoint body strictly: a valid origin (a
// signed-note key name), a decimal size without leading zeros, a base64
// SHA-256 hash in its canonical encoding, and extension lines that are
// not empty; an extension line "time T" sets Time (RFC 3339), and the
// lines "chain <bucket> <size> <base64 head>" set Chains, which must add
// up to the size and hash (checkChains). Any other extension line is
// kept out of Checkpoint but accepted, as C2SP says.
func ParseBody(text string) (*Checkpoint, error) {
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("%w: the text does not end in a newline", ErrMalformed)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return nil, fmt.Errorf("%w: %d lines, want origin, size and hash", ErrMalformed, len(lines))
	}
	c := &Checkpoint{Origin: lines[0]}
	if err := checkOrigin(c.Origin); err != nil {
		return nil, err
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return nil, fmt.Errorf("%w: size %q is not a decimal number without leading zeros", ErrMalformed, lines[1])
	}
	c.Size = size
	hash, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(hash) != sha256.Size || base64.StdEncoding.EncodeToString(hash) != lines[2] {
		return nil, fmt.Errorf("%w: hash %q is not the base64 of 32 bytes", ErrMalformed, lines[2])
	}
	c.Hash = hash
	for _, l := range lines[3:] {
		switch {
		case l == "":
			return nil, fmt.Errorf("%w: empty extension line", ErrMalformed)
		case strings.HasPrefix(l, timeLine):
			if !c.Time.IsZero() {
				return nil, fmt.Errorf("%w: two time lines", ErrMalformed)
			}
			t, err := time.Parse(time.RFC3339, strings.TrimPrefix(l, timeLine))
			if err != nil {
				return nil, fmt.Errorf("%w: time line %q is not RFC 3339", ErrMalformed, l)
			}
			c.Time = t
		case strings.HasPrefix(l, chainLine):
			h, err := parseChainLine(l)
			if err != nil {
				return nil, err
			}
			c.Chains = append(c.Chains, h)
		}
	}
	if err := c.checkChains(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkOrigin accepts what C2SP signed-note allows as a key name (the
// origin is the signature's name): not empty, valid UTF-8, no Unicode
// space, no "+", no control character.
func checkOrigin(o string) error {
	if o == "" || !utf8.ValidString(o) || strings.ContainsFunc(o, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '+'
	}) {
		return fmt.Errorf("%w: origin %q is not a key name (no space, \"+\" or control character)", ErrMalformed, o)
	}
	return nil
}

// Key is the audit key as the checkpoints use it: a note signer and the
// verifier of the same key under the same name.
type Key struct {
	Signer   note.Signer
	Verifier note.Verifier
	// VerifierKey is the key in the note verifier key form,
	// "<name>+<key ID hex>+<base64 of type byte and public key>":
	// golang.org/x/mod/sumdb/note's for Ed25519 (type 0x01), and type
	// 0x02 with the DER SubjectPublicKeyInfo for ECDSA.
	VerifierKey string
	// Algorithm is "Ed25519" or "ECDSA P-256" (P-384, P-521).
	Algorithm string
}

// NewKey makes the Key named name (the checkpoint origin) of signer, an
// Ed25519 key (crypto.Signer that signs the message, as ed25519 and
// hsm.Ed25519Key do) or an ECDSA key on P-256, P-384 or P-521 (signs a
// SHA-256 digest, DER, as ecdsa and hsm.Key do).
func NewKey(name string, signer crypto.Signer) (*Key, error) {
	v, alg, err := verifierFor(name, signer.Public())
	if err != nil {
		return nil, err
	}
	k := &Key{Verifier: v, Algorithm: alg}
	switch signer.Public().(type) {
	case ed25519.PublicKey:
		k.Signer = &noteSigner{name: name, hash: v.KeyHash(), sign: func(msg []byte) ([]byte, error) {
			return signer.Sign(nil, msg, crypto.Hash(0))
		}}
	default:
		k.Signer = &noteSigner{name: name, hash: v.KeyHash(), sign: func(msg []byte) ([]byte, error) {
			d := sha256.Sum256(msg)
			return signer.Sign(rand.Reader, d[:], crypto.SHA256)
		}}
	}
	k.VerifierKey, err = VerifierKey(name, signer.Public())
	return k, err
}

// VerifierKey encodes pub under name as a note verifier key: Ed25519 as
// golang.org/x/mod/sumdb/note.NewEd25519VerifierKey does; ECDSA as type
// 0x02 with its DER SubjectPublicKeyInfo and the key ID SHA-256(SPKI)[:4]
// (C2SP signed-note, as github.com/transparency-dev/formats encodes it).
func VerifierKey(name string, pub crypto.PublicKey) (string, error) {
	switch p := pub.(type) {
	case ed25519.PublicKey:
		s, err := note.NewEd25519VerifierKey(name, p)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrKey, err)
		}
		return s, nil
	case *ecdsa.PublicKey:
		if err := checkOrigin(name); err != nil {
			return "", err
		}
		spki, err := x509.MarshalPKIXPublicKey(p)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrKey, err)
		}
		return fmt.Sprintf("%s+%08x+%s", name, ecdsaKeyID(spki), base64.StdEncoding.EncodeToString(append([]byte{sigECDSA}, spki...))), nil
	}
	return "", fmt.Errorf("%w: a %T key (Ed25519 or ECDSA)", ErrKey, pub)
}

// NewVerifier parses a verifier key (VerifierKey's form): Ed25519 (type
// 0x01) through golang.org/x/mod/sumdb/note, ECDSA (type 0x02).
func NewVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	id, b64, ok2 := strings.Cut(rest, "+")
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok1 || !ok2 || err != nil || len(raw) < 2 || len(id) != 8 {
		return nil, fmt.Errorf("%w: verifier key is not <name>+<8 hex digits>+<base64>", ErrKey)
	}
	switch raw[0] {
	case sigEd25519:
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("%w: Ed25519 verifier key: %v", ErrKey, err)
		}
		return v, nil
	case sigECDSA:
		pub, err := x509.ParsePKIXPublicKey(raw[1:])
		ec, ok := pub.(*ecdsa.PublicKey)
		if err != nil || !ok {
			return nil, fmt.Errorf("%w: ECDSA verifier key without an ECDSA SubjectPublicKeyInfo", ErrKey)
		}
		v, _, err := verifierFor(name, ec)
		if err != nil {
			return nil, err
		}
		if fmt.Sprintf("%08x", v.KeyHash()) != strings.ToLower(id) {
			return nil, fmt.Errorf("%w: verifier key ID %s is not the key's (%08x)", ErrKey, id, v.KeyHash())
		}
		return v, nil
	}
	return nil, fmt.Errorf("%w: signature type 0x%02x (0x01 Ed25519, 0x02 ECDSA)", ErrKey, raw[0])
}

// verifierFor returns the note verifier of pub under name, and the
// algorithm's name.
func verifierFor(name string, pub crypto.PublicKey) (note.Verifier, string, error) {
	if err := checkOrigin(name); err != nil {
		return nil, "", err
	}
	switch p := pub.(type) {
	case ed25519.PublicKey:
		vkey, err := note.NewEd25519VerifierKey(name, p)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrKey, err)
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrKey, err)
		}
		return v, "Ed25519", nil
	case *ecdsa.PublicKey:
		switch p.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
		default:
			return nil, "", fmt.Errorf("%w: ECDSA on %s (P-256, P-384 or P-521)", ErrKey, p.Curve.Params().Name)
		}
		spki, err := x509.MarshalPKIXPublicKey(p)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrKey, err)
		}
		return &ecdsaVerifier{name: name, hash: ecdsaKeyID(spki), pub: p}, "ECDSA " + p.Curve.Params().Name, nil
	}
	return nil, "", fmt.Errorf("%w: a %T key (Ed25519 or ECDSA)", ErrKey, pub)
}

func ecdsaKeyID(spki []byte) uint32 {
	h := sha256.Sum256(spki)
	return binary.BigEndian.Uint32(h[:4])
}

// noteSigner is a note.Signer over a function.
type noteSigner struct {
	name string
	hash uint32
	sign func(msg []byte) ([]byte, error)
}

func (s *noteSigner) Name() string                    { return s.name }
func (s *noteSigner) KeyHash() uint32                 { return s.hash }
func (s *noteSigner) Sign(msg []byte) ([]byte, error) { return s.sign(msg) }

// ecdsaVerifier verifies signature type 0x02: ECDSA over SHA-256 of the
// note text, the signature DER (RFC 3279 ECDSA-Sig-Value).
type ecdsaVerifier struct {
	name string
	hash uint32
	pub  *ecdsa.PublicKey
}

func (v *ecdsaVerifier) Name() string    { return v.name }
func (v *ecdsaVerifier) KeyHash() uint32 { return v.hash }
func (v *ecdsaVerifier) Verify(msg, sig []byte) bool {
	d := sha256.Sum256(msg)
	return ecdsa.VerifyASN1(v.pub, d[:], sig)
}

// Sign signs c with k as a C2SP signed note whose one signature line is
// k's.
func Sign(c *Checkpoint, k *Key) ([]byte, error) {
	if err := checkOrigin(c.Origin); err != nil {
		return nil, err
	}
	if len(c.Hash) != sha256.Size {
		return nil, fmt.Errorf("%w: hash of %d bytes", ErrMalformed, len(c.Hash))
	}
	if err := c.checkChains(); err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: c.Body()}, k.Signer)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	return msg, nil
}

// Open checks that msg is a signed note carrying a valid signature of v
// (other signatures, such as a witness's cosignature, are ignored) and
// parses its text as a checkpoint of the log named origin ("" accepts
// any origin). It refuses notes larger than MaxNote and a checkpoint of
// size 0: the empty log has nothing to prove.
func Open(msg []byte, v note.Verifier, origin string) (*Checkpoint, error) {
	if len(msg) > MaxNote {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(msg), MaxNote)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case errors.As(err, &unverified):
		return nil, fmt.Errorf("%w: no signature by %s (key ID %08x); it carries %s", ErrSignature, v.Name(), v.KeyHash(), sigNames(unverified.Note.UnverifiedSigs))
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("%w: the signature by %s (key ID %08x) is not over this text: the text was changed after signing, or another key signed it", ErrSignature, v.Name(), v.KeyHash())
	case err != nil:
		return nil, fmt.Errorf("%w: not a signed note (text, a blank line, signature lines \"— <name> <base64>\"): %v", ErrMalformed, err)
	}
	c, err := ParseBody(n.Text)
	if err != nil {
		return nil, err
	}
	if c.Size == 0 {
		return nil, fmt.Errorf("%w: size 0: a checkpoint of the empty log proves nothing (signd never signs one)", ErrMalformed)
	}
	if origin != "" && c.Origin != origin {
		return nil, fmt.Errorf("%w: its origin is %q, this log's is %q (audit.checkpoint_origin)", ErrOrigin, c.Origin, origin)
	}
	return c, nil
}

// sigNames lists the signature lines of a note for a message.
func sigNames(sigs []note.Signature) string {
	if len(sigs) == 0 {
		return "none"
	}
	names := make([]string, len(sigs))
	for i, s := range sigs {
		names[i] = fmt.Sprintf("%s (key ID %08x)", s.Name, s.Hash)
	}
	return strings.Join(names, ", ")
}

// Origin returns the first line of a checkpoint note without verifying
// anything: the name its signature is expected under.
func Origin(msg []byte) string {
	line, _, _ := bytes.Cut(msg, []byte("\n"))
	return string(line)
}

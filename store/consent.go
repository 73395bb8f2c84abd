package store

import (
	"bytes"
	"maps"
	"slices"
)

// ConsentRecord is what a user approved on a consent page: the name of each
// item the page showed (for OpenID Connect a claim name) → a digest of the
// value it showed. The store keeps it opaque; the scope profile that
// described the page computes the digests and, before it releases data,
// compares them with the digests of the current values.
type ConsentRecord map[string][]byte

// Limits of a ConsentRecord.
const (
	// MaxConsentItems bounds the number of items of one record.
	MaxConsentItems = 256
	// MaxConsentDigest bounds the length of one digest in bytes (SHA-512
	// fits).
	MaxConsentDigest = 64
)

// Equal reports whether r records item name with exactly digest.
func (r ConsentRecord) Equal(name string, digest []byte) bool {
	d, ok := r[name]
	return ok && len(digest) > 0 && bytes.Equal(d, digest)
}

// Clone returns a deep copy of r (nil for an empty record).
func (r ConsentRecord) Clone() ConsentRecord {
	if len(r) == 0 {
		return nil
	}
	out := make(ConsentRecord, len(r))
	for k, v := range r {
		out[k] = slices.Clone(v)
	}
	return out
}

// validate checks item names (1–maxTextLen bytes of text) and digests
// (1–MaxConsentDigest bytes).
func (r ConsentRecord) validate(what string) error {
	if len(r) > MaxConsentItems {
		return invalid("%s: consent record has %d items, at most %d", what, len(r), MaxConsentItems)
	}
	for _, name := range slices.Sorted(maps.Keys(r)) {
		if name == "" {
			return invalid("%s: consent record has an item without a name", what)
		}
		if err := validateText(what+" consent item name", name, maxTextLen); err != nil {
			return err
		}
		if d := r[name]; len(d) == 0 || len(d) > MaxConsentDigest {
			return invalid("%s: consent item %q needs a digest of 1 to %d bytes", what, name, MaxConsentDigest)
		}
	}
	return nil
}

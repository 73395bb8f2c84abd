package memory

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/signd/signd/store"
)

// OIDC signing keys (store.OIDCTx), by KID.

// SigningKeys implements store.OIDCTx.
func (t *tx) SigningKeys() ([]store.SigningKey, error) {
	keys := []store.SigningKey{}
	t.s.signingKeys.all(func(_ string, k *store.SigningKey) bool {
		keys = append(keys, *cloneSigningKey(k))
		return true
	})
	slices.SortFunc(keys, func(a, b store.SigningKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.KID, b.KID))
	})
	return keys, nil
}

// CreateSigningKey implements store.OIDCTx.
func (t *tx) CreateSigningKey(k *store.SigningKey) error {
	if err := t.checkWrite(k); err != nil {
		return err
	}
	if t.s.signingKeys.has(k.KID) {
		return fmt.Errorf("%w: signing key %q", store.ErrAlreadyExists, k.KID)
	}
	t.s.signingKeys.put(k.KID, cloneSigningKey(k))
	return nil
}

// PutSigningKey implements store.OIDCTx.
func (t *tx) PutSigningKey(k *store.SigningKey) error {
	if err := t.checkWrite(k); err != nil {
		return err
	}
	old, ok := t.s.signingKeys.get(k.KID)
	if !ok {
		return fmt.Errorf("%w: signing key %q", store.ErrNotFound, k.KID)
	}
	switch {
	case !bytes.Equal(old.KeyID, k.KeyID), !bytes.Equal(old.PublicKey, k.PublicKey):
		return fmt.Errorf("%w: signing key %q: the key cannot change", store.ErrInvalid, k.KID)
	case !old.CreatedAt.Equal(k.CreatedAt):
		return fmt.Errorf("%w: signing key %q: the creation time cannot change", store.ErrInvalid, k.KID)
	}
	t.s.signingKeys.put(k.KID, cloneSigningKey(k))
	return nil
}

// DeleteSigningKey implements store.OIDCTx.
func (t *tx) DeleteSigningKey(kid string) error {
	if err := t.writes(); err != nil {
		return err
	}
	if !t.s.signingKeys.has(kid) {
		return fmt.Errorf("%w: signing key %q", store.ErrNotFound, kid)
	}
	t.s.signingKeys.delete(kid)
	return nil
}

package kv

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// OIDC signing keys live in bucketOIDCKeys under their KID.

type signingKeyRecord struct {
	KID         string    `json:"kid"`
	KeyID       []byte    `json:"key_id"`
	Label       string    `json:"label,omitempty"`
	Algorithm   string    `json:"alg"`
	PublicKey   []byte    `json:"public_key"`
	State       string    `json:"state"`
	CreatedAt   time.Time `json:"created_at"`
	ActivatedAt time.Time `json:"activated_at,omitzero"`
	RetiredAt   time.Time `json:"retired_at,omitzero"`
}

func signingKeyToRecord(k *store.SigningKey) *signingKeyRecord {
	return &signingKeyRecord{
		KID: k.KID, KeyID: k.KeyID, Label: k.Label, Algorithm: k.Algorithm,
		PublicKey: k.PublicKey, State: string(k.State), CreatedAt: k.CreatedAt.UTC().Round(0),
		ActivatedAt: k.ActivatedAt.UTC().Round(0), RetiredAt: k.RetiredAt.UTC().Round(0),
	}
}

func (r *signingKeyRecord) signingKey() *store.SigningKey {
	return &store.SigningKey{
		KID: r.KID, KeyID: r.KeyID, Label: r.Label, Algorithm: r.Algorithm,
		PublicKey: r.PublicKey, State: store.SigningKeyState(r.State), CreatedAt: r.CreatedAt,
		ActivatedAt: r.ActivatedAt, RetiredAt: r.RetiredAt,
	}
}

// SigningKeys implements store.OIDCTx.
func (t *Tx) SigningKeys() ([]store.SigningKey, error) {
	keys, err := listRecords(t, bucketOIDCKeys, (*signingKeyRecord).signingKey)
	slices.SortFunc(keys, func(a, b store.SigningKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.KID, b.KID))
	})
	return keys, err
}

func (t *Tx) signingKey(kid string) (*store.SigningKey, error) {
	var r signingKeyRecord
	ok, err := t.get(bucketOIDCKeys, kid, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: signing key %q", store.ErrNotFound, kid)
	}
	return r.signingKey(), nil
}

// CreateSigningKey implements store.OIDCTx.
func (t *Tx) CreateSigningKey(k *store.SigningKey) error {
	if err := t.checkWrite(k); err != nil {
		return err
	}
	if ok, err := t.exists(bucketOIDCKeys, k.KID); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: signing key %q", store.ErrAlreadyExists, k.KID)
	}
	return t.put(bucketOIDCKeys, k.KID, signingKeyToRecord(k))
}

// PutSigningKey implements store.OIDCTx.
func (t *Tx) PutSigningKey(k *store.SigningKey) error {
	if err := t.checkWrite(k); err != nil {
		return err
	}
	old, err := t.signingKey(k.KID)
	if err != nil {
		return err
	}
	switch {
	case !bytes.Equal(old.KeyID, k.KeyID), !bytes.Equal(old.PublicKey, k.PublicKey):
		return fmt.Errorf("%w: signing key %q: the key cannot change", store.ErrInvalid, k.KID)
	case !old.CreatedAt.Equal(k.CreatedAt):
		return fmt.Errorf("%w: signing key %q: the creation time cannot change", store.ErrInvalid, k.KID)
	}
	return t.put(bucketOIDCKeys, k.KID, signingKeyToRecord(k))
}

// DeleteSigningKey implements store.OIDCTx.
func (t *Tx) DeleteSigningKey(kid string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if ok, err := t.exists(bucketOIDCKeys, kid); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: signing key %q", store.ErrNotFound, kid)
	}
	return t.delete(bucketOIDCKeys, kid)
}

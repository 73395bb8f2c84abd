package kv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// Tokens live in bucketTokens under their 32-byte fingerprint. Three
// indexes point back at them:
//   - bucketTokensByCode: codeHash ‖ tokenHash → empty (code reuse revokes);
//   - bucketTokensByExp: expiry (8-byte big-endian Unix nanoseconds) ‖
//     tokenHash → empty (the sweeper walks only what has expired);
//   - bucketTokensByParty: party ‖ tokenHash → empty (revocation by user,
//     client and credential; revoke.go).

type tokenRecord struct {
	Kind         string    `json:"kind"`
	ClientID     string    `json:"client_id"`
	Username     string    `json:"username"`
	Scopes       []string  `json:"scopes,omitempty"`
	CodeHash     []byte    `json:"code_hash,omitempty"`
	CredentialID string    `json:"credential_id,omitempty"`
	Hashes       [][]byte  `json:"hashes,omitempty"`
	AuthTime     time.Time `json:"auth_time"`
	RequestedAt  time.Time `json:"requested_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	CreatedAt    time.Time `json:"created_at"`
	// Consented is absent in records written before it existed: they
	// read back as nothing consented.
	Consented map[string][]byte `json:"consented,omitempty"`
	// RotatedAt (refresh tokens only) is absent in records written before
	// it existed: not rotated.
	RotatedAt *time.Time `json:"rotated_at,omitempty"`
	// SecretGen (SADs) is absent in records written before it existed:
	// generation 0.
	SecretGen uint64 `json:"secret_generation,omitempty"`
}

func expiryKey(exp time.Time, hash []byte) string {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(max(exp.UnixNano(), 0)))
	return string(k[:]) + string(hash)
}

// CreateToken implements store.OAuthTx.
func (t *Tx) CreateToken(tok *store.Token) error {
	if err := t.checkWrite(tok); err != nil {
		return err
	}
	key := string(tok.Hash)
	if ok, err := t.exists(bucketTokens, key); err != nil {
		return err
	} else if ok {
		return store.ErrAlreadyExists
	}
	tok.CreatedAt = t.stamp()
	rec := &tokenRecord{
		Kind: string(tok.Kind), ClientID: tok.ClientID, Username: tok.Username,
		Scopes: tok.Scopes, CodeHash: tok.CodeHash, CredentialID: tok.CredentialID,
		Hashes: tok.Hashes, AuthTime: tok.AuthTime.UTC(), RequestedAt: tok.RequestedAt.UTC(),
		ExpiresAt: tok.ExpiresAt.UTC(), CreatedAt: tok.CreatedAt, Consented: tok.Consented.Clone(),
		SecretGen: tok.SecretGeneration,
	}
	if !tok.RotatedAt.IsZero() {
		at := tok.RotatedAt.UTC()
		rec.RotatedAt = &at
	}
	if err := t.putRaw(bucketTokens, key, encodeToken(rec)); err != nil {
		return err
	}
	if err := t.index(bucketTokensByParty, rec.parties(), tok.Hash); err != nil {
		return err
	}
	if len(tok.CodeHash) != 0 {
		if err := t.putRaw(bucketTokensByCode, string(tok.CodeHash)+key, []byte{}); err != nil {
			return err
		}
	}
	return t.putRaw(bucketTokensByExp, expiryKey(rec.ExpiresAt, tok.Hash), []byte{})
}

func (r *tokenRecord) parties() []string {
	return store.GrantParties(r.ClientID, r.Username, r.CredentialID)
}

func decodeTokenParties(raw []byte) ([]string, error) {
	r, err := decodeToken(raw)
	return r.parties(), err
}

// decodedToken is the token record a transaction decoded last: reading a
// SAD and then deleting it (signHash) decodes it once. Every write to the
// tokens bucket (putRaw, delete) forgets it.
type decodedToken struct {
	hash string
	rec  *tokenRecord
}

// token returns the stored record, or nil if there is none. The record
// may be shared with later calls of the same transaction: callers must
// not modify it or hand out its slices.
func (t *Tx) token(hash []byte) (*tokenRecord, error) {
	if t.lastToken.rec != nil && t.lastToken.hash == string(hash) {
		return t.lastToken.rec, nil
	}
	b, err := t.bucket(bucketTokens)
	if err != nil {
		return nil, err
	}
	raw := b.Get(hash)
	if raw == nil {
		return nil, nil
	}
	rec, err := decodeToken(raw)
	if err != nil {
		return nil, fmt.Errorf("store: decode %s/%q: %w", bucketTokens, hash, err)
	}
	t.lastToken = decodedToken{hash: string(hash), rec: rec}
	return rec, nil
}

// Token implements store.OAuthTx.
func (t *Tx) Token(hash []byte) (*store.Token, error) {
	rec, err := t.token(hash)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, store.ErrNotFound
	}
	tok := &store.Token{
		Hash: bytes.Clone(hash), Kind: store.TokenKind(rec.Kind), ClientID: rec.ClientID,
		Username: rec.Username, Scopes: slices.Clone(rec.Scopes), CodeHash: bytes.Clone(rec.CodeHash),
		CredentialID: rec.CredentialID, Hashes: cloneChain(rec.Hashes), AuthTime: rec.AuthTime,
		RequestedAt: rec.RequestedAt, ExpiresAt: rec.ExpiresAt, CreatedAt: rec.CreatedAt,
		Consented: store.ConsentRecord(rec.Consented).Clone(), SecretGeneration: rec.SecretGen,
	}
	if rec.RotatedAt != nil {
		tok.RotatedAt = *rec.RotatedAt
	}
	return tok, nil
}

// DeleteToken implements store.OAuthTx. Removing an access token raises
// the revocation generation; consuming a SAD does not.
func (t *Tx) DeleteToken(hash []byte) error {
	kind, err := t.deleteToken(hash)
	if err != nil || kind != store.TokenAccess {
		return err
	}
	return t.raiseRevocations()
}

// deleteToken removes a token and its index entries and returns its kind;
// the sweeper calls it directly (an expired token is refused anyway).
func (t *Tx) deleteToken(hash []byte) (store.TokenKind, error) {
	if err := t.writable(); err != nil {
		return "", err
	}
	tok, err := t.token(hash)
	if err != nil {
		return "", err
	}
	if tok == nil {
		return "", store.ErrNotFound
	}
	kind := store.TokenKind(tok.Kind)
	if err := t.delete(bucketTokens, string(hash)); err != nil {
		return kind, err
	}
	if err := t.unindex(bucketTokensByParty, tok.parties(), hash); err != nil {
		return kind, err
	}
	if len(tok.CodeHash) != 0 {
		if err := t.delete(bucketTokensByCode, string(tok.CodeHash)+string(hash)); err != nil {
			return kind, err
		}
	}
	return kind, t.delete(bucketTokensByExp, expiryKey(tok.ExpiresAt, hash))
}

// DeleteTokensByCode implements store.OAuthTx.
func (t *Tx) DeleteTokensByCode(codeHash []byte) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	b, err := t.bucket(bucketTokensByCode)
	if err != nil {
		return 0, err
	}
	var hashes [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(codeHash); k != nil && bytes.HasPrefix(k, codeHash); k, _ = c.Next() {
		hashes = append(hashes, bytes.Clone(k[len(codeHash):]))
	}
	for _, h := range hashes {
		if err := t.DeleteToken(h); err != nil {
			return 0, err
		}
	}
	return len(hashes), nil
}

// DeleteExpiredTokens implements store.OAuthTx.
func (t *Tx) DeleteExpiredTokens(now time.Time) (int, error) {
	return t.deleteExpiredTokens(now, 0)
}

// deleteExpiredTokens removes tokens that expired at or before now, at
// most limit of them (all when limit is 0), earliest expiry first.
func (t *Tx) deleteExpiredTokens(now time.Time, limit int) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	b, err := t.bucket(bucketTokensByExp)
	if err != nil {
		return 0, err
	}
	end := expiryKey(now.Add(1), nil) // every key below this has expired
	var hashes [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && string(k) < end && (limit == 0 || len(hashes) < limit); k, _ = c.Next() {
		if len(k) < 8 { // not written by CreateToken: expiry ‖ hash
			return 0, fmt.Errorf("store: %s has a malformed key %x", bucketTokensByExp, k)
		}
		hashes = append(hashes, bytes.Clone(k[8:]))
	}
	for _, h := range hashes {
		if _, err := t.deleteToken(h); err != nil {
			return 0, err
		}
	}
	return len(hashes), nil
}

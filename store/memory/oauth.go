package memory

import (
	"errors"
	"fmt"
	"time"

	"github.com/signd/signd/store"
)

// Tokens and SAD (store.OAuthTx), pending requests, codes and sessions
// (store.AuthFlowTx). Each kind is an expiring table (table.go): records
// by fingerprint with an expiry index and a party index; tokens also have
// the by-code index.

func tokenMeta(t *store.Token) (time.Time, []string) {
	return t.ExpiresAt, store.GrantParties(t.ClientID, t.Username, t.CredentialID)
}

func requestMeta(r *store.AuthRequest) (time.Time, []string) {
	return r.ExpiresAt, store.GrantParties(r.ClientID, r.Username, r.CredentialID)
}

// codeMeta: a redeemed code (a tombstone) hangs on nobody; revocation
// leaves it alone.
func codeMeta(c *store.AuthCode) (time.Time, []string) {
	if !c.RedeemedAt.IsZero() {
		return c.ExpiresAt, nil
	}
	return c.ExpiresAt, store.GrantParties(c.ClientID, c.Username, c.CredentialID)
}

func sessionMeta(s *store.Session) (time.Time, []string) {
	return s.ExpiresAt, store.SessionParties(s.Username)
}

// CreateToken implements store.OAuthTx.
func (t *tx) CreateToken(tok *store.Token) error {
	if err := t.checkWrite(tok); err != nil {
		return err
	}
	if t.s.tokens.has(tok.Hash) {
		return store.ErrAlreadyExists
	}
	tok.CreatedAt = t.stamp()
	rec := cloneToken(tok)
	t.s.tokens.put(rec.Hash, rec)
	if len(rec.CodeHash) != 0 {
		t.s.tokensByCode.add(string(rec.CodeHash) + string(rec.Hash))
	}
	return nil
}

// Token implements store.OAuthTx.
func (t *tx) Token(hash []byte) (*store.Token, error) {
	tok, ok := t.s.tokens.get(hash)
	if !ok {
		return nil, store.ErrNotFound
	}
	return cloneToken(tok), nil
}

// removeToken deletes a token with all its index entries; nil if absent.
func (t *tx) removeToken(hash []byte) *store.Token {
	tok, ok := t.s.tokens.remove(hash)
	if !ok {
		return nil
	}
	if len(tok.CodeHash) != 0 {
		t.s.tokensByCode.delete(string(tok.CodeHash) + string(hash))
	}
	return tok
}

// DeleteToken implements store.OAuthTx.
func (t *tx) DeleteToken(hash []byte) error {
	if err := t.writes(); err != nil {
		return err
	}
	tok := t.removeToken(hash)
	if tok == nil {
		return store.ErrNotFound
	}
	t.revoked(tok)
	return nil
}

// revoked raises the revocation generation if tok, just removed, was an
// access token (store.RevocationReader).
func (t *tx) revoked(tok *store.Token) {
	if tok.Kind == store.TokenAccess {
		t.s.revocations++
	}
}

// RevocationGeneration implements store.RevocationReader.
func (t *tx) RevocationGeneration() (uint64, error) {
	return t.s.revocations, nil
}

// DeleteTokensByCode implements store.OAuthTx.
func (t *tx) DeleteTokensByCode(codeHash []byte) (int, error) {
	if err := t.writes(); err != nil {
		return 0, err
	}
	hashes := withPrefix(t.s.tokensByCode, string(codeHash))
	for _, h := range hashes {
		// A codeHash shorter than a fingerprint matches keys whose rest
		// names no token: ErrNotFound, as from bolt.
		tok := t.removeToken([]byte(h))
		if tok == nil {
			return 0, store.ErrNotFound
		}
		t.revoked(tok)
	}
	return len(hashes), nil
}

// DeleteExpiredTokens implements store.OAuthTx.
func (t *tx) DeleteExpiredTokens(now time.Time) (int, error) {
	if err := t.writes(); err != nil {
		return 0, err
	}
	return t.deleteExpiredTokens(now, 0), nil
}

// deleteExpiredTokens removes tokens that expired at or before now, at
// most limit of them (all when limit is 0).
func (t *tx) deleteExpiredTokens(now time.Time, limit int) int {
	hashes := t.s.tokens.expired(now, limit)
	for _, h := range hashes {
		t.removeToken(h)
	}
	return len(hashes)
}

// deleteExpired removes the records of x that expired at or before now, at
// most limit of them (all when limit is 0).
func deleteExpired[R any](t *tx, x expiring[R], now time.Time, limit int) (int, error) {
	if err := t.writes(); err != nil {
		return 0, err
	}
	hashes := x.expired(now, limit)
	for _, h := range hashes {
		x.remove(h)
	}
	return len(hashes), nil
}

// CreateAuthRequest implements store.AuthFlowTx.
func (t *tx) CreateAuthRequest(r *store.AuthRequest) error {
	if err := t.checkWrite(r); err != nil {
		return err
	}
	r.CreatedAt = t.stamp()
	if t.s.requests.has(r.Hash) {
		return store.ErrAlreadyExists
	}
	rec := cloneRequest(r)
	t.s.requests.put(rec.Hash, rec)
	return nil
}

// AuthRequest implements store.AuthFlowTx.
func (t *tx) AuthRequest(hash []byte) (*store.AuthRequest, error) {
	r, ok := t.s.requests.get(hash)
	if !ok {
		return nil, fmt.Errorf("%w: authorization request", store.ErrNotFound)
	}
	return cloneRequest(r), nil
}

// PutAuthRequest implements store.AuthFlowTx.
func (t *tx) PutAuthRequest(r *store.AuthRequest) error {
	if err := t.checkWrite(r); err != nil {
		return err
	}
	old, ok := t.s.requests.get(r.Hash)
	if !ok {
		return fmt.Errorf("%w: authorization request", store.ErrNotFound)
	}
	r.CreatedAt = old.CreatedAt
	rec := cloneRequest(r)
	t.s.requests.put(rec.Hash, rec)
	return nil
}

// DeleteAuthRequest implements store.AuthFlowTx.
func (t *tx) DeleteAuthRequest(hash []byte) error {
	if err := t.writes(); err != nil {
		return err
	}
	if _, ok := t.s.requests.remove(hash); !ok {
		return fmt.Errorf("%w: authorization request", store.ErrNotFound)
	}
	return nil
}

// DeleteExpiredAuthRequests implements store.AuthFlowTx.
func (t *tx) DeleteExpiredAuthRequests(now time.Time) (int, error) {
	return deleteExpired(t, t.s.requests, now, 0)
}

// CreateCode implements store.AuthFlowTx.
func (t *tx) CreateCode(c *store.AuthCode) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	c.CreatedAt = t.stamp()
	if t.s.codes.has(c.Hash) {
		return store.ErrAlreadyExists
	}
	rec := cloneCode(c)
	t.s.codes.put(rec.Hash, rec)
	return nil
}

// Code implements store.AuthFlowTx.
func (t *tx) Code(hash []byte) (*store.AuthCode, error) {
	c, ok := t.s.codes.get(hash)
	if !ok {
		return nil, fmt.Errorf("%w: authorization code", store.ErrNotFound)
	}
	return cloneCode(c), nil
}

// RedeemCode implements store.AuthFlowTx: the single-use gate, serialized
// by the write mutex.
func (t *tx) RedeemCode(hash []byte, at, keepUntil time.Time) error {
	if err := t.writes(); err != nil {
		return err
	}
	old, ok := t.s.codes.get(hash)
	if !ok {
		return fmt.Errorf("%w: authorization code", store.ErrNotFound)
	}
	if !old.RedeemedAt.IsZero() {
		return store.ErrCodeRedeemed
	}
	if at.IsZero() {
		return errors.New("store: RedeemCode needs the redemption time")
	}
	rec := cloneCode(old) // stored records are never written in place
	rec.RedeemedAt = at.UTC()
	if keepUntil.After(rec.ExpiresAt) {
		rec.ExpiresAt = keepUntil.UTC()
	}
	t.s.codes.put(rec.Hash, rec)
	return nil
}

// DeleteExpiredCodes implements store.AuthFlowTx.
func (t *tx) DeleteExpiredCodes(now time.Time) (int, error) {
	return deleteExpired(t, t.s.codes, now, 0)
}

// CreateSession implements store.AuthFlowTx.
func (t *tx) CreateSession(s *store.Session) error {
	if err := t.checkWrite(s); err != nil {
		return err
	}
	s.CreatedAt = t.stamp()
	if t.s.sessions.has(s.Hash) {
		return store.ErrAlreadyExists
	}
	rec := cloneSession(s)
	t.s.sessions.put(rec.Hash, rec)
	return nil
}

// Session implements store.AuthFlowTx.
func (t *tx) Session(hash []byte) (*store.Session, error) {
	s, ok := t.s.sessions.get(hash)
	if !ok {
		return nil, fmt.Errorf("%w: session", store.ErrNotFound)
	}
	return cloneSession(s), nil
}

// DeleteSession implements store.AuthFlowTx.
func (t *tx) DeleteSession(hash []byte) error {
	if err := t.writes(); err != nil {
		return err
	}
	if _, ok := t.s.sessions.remove(hash); !ok {
		return fmt.Errorf("%w: session", store.ErrNotFound)
	}
	return nil
}

// DeleteExpiredSessions implements store.AuthFlowTx.
func (t *tx) DeleteExpiredSessions(now time.Time) (int, error) {
	return deleteExpired(t, t.s.sessions, now, 0)
}

// SweepExpired implements store.SweepTx.
func (t *tx) SweepExpired(now time.Time, limit int) (store.Swept, error) {
	if err := t.writes(); err != nil {
		return store.Swept{}, err
	}
	return store.SweepKinds(limit, func(n int) (int, error) { return t.deleteExpiredTokens(now, n), nil },
		func(n int) (int, error) { return deleteExpired(t, t.s.requests, now, n) },
		func(n int) (int, error) { return deleteExpired(t, t.s.codes, now, n) },
		func(n int) (int, error) { return deleteExpired(t, t.s.sessions, now, n) })
}

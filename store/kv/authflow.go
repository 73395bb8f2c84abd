package kv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/signd/signd/store"
)

// Pending authorization requests, authorization codes and login sessions
// each live in their bucket under their 32-byte fingerprint, with an expiry
// index beside it (expiry as 8-byte big-endian Unix nanoseconds ‖
// fingerprint → empty), so the sweeper walks only what has expired:
//
//	auth_requests            request fingerprint → JSON authRequestRecord
//	auth_requests_by_expiry  expiry ‖ fingerprint → empty
//	codes                    code fingerprint → JSON authCodeRecord
//	codes_by_expiry          expiry ‖ fingerprint → empty
//	sessions                 session fingerprint → JSON sessionRecord
//	sessions_by_expiry       expiry ‖ fingerprint → empty
//
// and a party index (revoke.go) for revocation by user, client and
// credential: auth_requests_by_party, codes_by_party (unredeemed codes
// only), sessions_by_party.

// The buckets of this file; BucketNames registers them.
const (
	bucketAuthRequests      = "auth_requests"
	bucketAuthRequestsByExp = "auth_requests_by_expiry"
	bucketCodes             = "codes"
	bucketCodesByExp        = "codes_by_expiry"
	bucketSessions          = "sessions"
	bucketSessionsByExp     = "sessions_by_expiry"
)

type grantRecord struct {
	ClientID            string            `json:"client_id"`
	RedirectURI         string            `json:"redirect_uri"`
	RedirectURISent     bool              `json:"redirect_uri_sent,omitempty"`
	Scopes              []string          `json:"scopes,omitempty"`
	Profile             string            `json:"profile"`
	CredentialID        string            `json:"credential_id,omitempty"`
	Hashes              [][]byte          `json:"hashes,omitempty"`
	Params              map[string]string `json:"params,omitempty"`
	CodeChallenge       string            `json:"code_challenge,omitempty"`
	CodeChallengeMethod string            `json:"code_challenge_method,omitempty"`
	Nonce               string            `json:"nonce,omitempty"`
	Lang                string            `json:"lang,omitempty"`
	SSO                 bool              `json:"sso,omitempty"`
	Prompt              string            `json:"prompt,omitempty"`
	MaxAge              time.Duration     `json:"max_age,omitempty"`
	HasMaxAge           bool              `json:"has_max_age,omitempty"`
	Username            string            `json:"username,omitempty"`
	AuthTime            time.Time         `json:"auth_time"`
	RequestedAt         time.Time         `json:"requested_at"`
	// Consented is absent in records written before it existed: they
	// read back as nothing consented.
	Consented   map[string][]byte `json:"consented,omitempty"`
	PINVerified bool              `json:"pin_verified,omitempty"`
}

func grantToRecord(g *store.Grant) grantRecord {
	return grantRecord{
		ClientID: g.ClientID, RedirectURI: g.RedirectURI, RedirectURISent: g.RedirectURISent,
		Scopes: g.Scopes, Profile: g.Profile, CredentialID: g.CredentialID, Hashes: g.Hashes,
		Params: g.Params, CodeChallenge: g.CodeChallenge, CodeChallengeMethod: g.CodeChallengeMethod,
		Nonce: g.Nonce, Lang: g.Lang, SSO: g.SSO, Prompt: g.Prompt, MaxAge: g.MaxAge,
		HasMaxAge: g.HasMaxAge, Username: g.Username, AuthTime: g.AuthTime.UTC(),
		RequestedAt: g.RequestedAt.UTC(), Consented: g.Consented.Clone(), PINVerified: g.PINVerified,
	}
}

func (r *grantRecord) grant() store.Grant {
	return store.Grant{
		ClientID: r.ClientID, RedirectURI: r.RedirectURI, RedirectURISent: r.RedirectURISent,
		Scopes: r.Scopes, Profile: r.Profile, CredentialID: r.CredentialID, Hashes: r.Hashes,
		Params: maps.Clone(r.Params), CodeChallenge: r.CodeChallenge,
		CodeChallengeMethod: r.CodeChallengeMethod, Nonce: r.Nonce, Lang: r.Lang, SSO: r.SSO,
		Prompt: r.Prompt, MaxAge: r.MaxAge, HasMaxAge: r.HasMaxAge, Username: r.Username,
		AuthTime: r.AuthTime, RequestedAt: r.RequestedAt, PINVerified: r.PINVerified,
		Consented: store.ConsentRecord(r.Consented).Clone(),
	}
}

type authRequestRecord struct {
	grantRecord
	State          string    `json:"state,omitempty"`
	CSRFHash       []byte    `json:"csrf_hash"`
	BindingHash    []byte    `json:"binding_hash"`
	Stage          string    `json:"stage"`
	ConsentShownAt time.Time `json:"consent_shown_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	CreatedAt      time.Time `json:"created_at"`
}

type authCodeRecord struct {
	grantRecord
	ExpiresAt  time.Time `json:"expires_at"`
	RedeemedAt time.Time `json:"redeemed_at"`
	CreatedAt  time.Time `json:"created_at"`
}

type sessionRecord struct {
	Username  string    `json:"username"`
	AuthTime  time.Time `json:"auth_time"`
	ExpiresAt time.Time `json:"expires_at"`
	CreatedAt time.Time `json:"created_at"`
}

// expiring is one kind of record with an expiry index and a party index.
type expiring struct {
	bucket, index, parties string
	// decode returns the expiry and the parties (revoke.go) of a stored
	// record.
	decode func(raw []byte) (time.Time, []string, error)
}

var (
	requestsKind = expiring{bucketAuthRequests, bucketAuthRequestsByExp, bucketAuthRequestsByParty, decodeRequestMeta}
	codesKind    = expiring{bucketCodes, bucketCodesByExp, bucketCodesByParty, decodeCodeMeta}
	sessionsKind = expiring{bucketSessions, bucketSessionsByExp, bucketSessionsByParty, decodeSessionMeta}
)

func decodeRequestMeta(raw []byte) (time.Time, []string, error) {
	var r authRequestRecord
	err := json.Unmarshal(raw, &r)
	return r.ExpiresAt, requestParties(&r), err
}

func decodeCodeMeta(raw []byte) (time.Time, []string, error) {
	var r authCodeRecord
	err := json.Unmarshal(raw, &r)
	return r.ExpiresAt, codeParties(&r), err
}

func decodeSessionMeta(raw []byte) (time.Time, []string, error) {
	var r sessionRecord
	err := json.Unmarshal(raw, &r)
	return r.ExpiresAt, sessionParties(&r), err
}

func requestParties(r *authRequestRecord) []string {
	return store.GrantParties(r.ClientID, r.Username, r.CredentialID)
}

// codeParties: a redeemed code (a tombstone) hangs on nobody; revocation
// leaves it alone.
func codeParties(r *authCodeRecord) []string {
	if !r.RedeemedAt.IsZero() {
		return nil
	}
	return store.GrantParties(r.ClientID, r.Username, r.CredentialID)
}

func sessionParties(r *sessionRecord) []string {
	return store.SessionParties(r.Username)
}

// createExpiring stores a new record under hash with its index entries.
func (t *Tx) createExpiring(k expiring, hash []byte, exp time.Time, parties []string, rec any) error {
	if ok, err := t.exists(k.bucket, string(hash)); err != nil {
		return err
	} else if ok {
		return store.ErrAlreadyExists
	}
	if err := t.put(k.bucket, string(hash), rec); err != nil {
		return err
	}
	if err := t.index(k.parties, parties, hash); err != nil {
		return err
	}
	return t.putRaw(k.index, expiryKey(exp, hash), []byte{})
}

// replaceExpiring overwrites a record and moves its index entries from
// oldExp and oldParties to newExp and newParties.
func (t *Tx) replaceExpiring(k expiring, hash []byte, oldExp, newExp time.Time, oldParties, newParties []string, rec any) error {
	if err := t.put(k.bucket, string(hash), rec); err != nil {
		return err
	}
	if err := t.reindex(k.parties, oldParties, newParties, hash); err != nil {
		return err
	}
	if oldExp.Equal(newExp) {
		return nil
	}
	if err := t.delete(k.index, expiryKey(oldExp, hash)); err != nil {
		return err
	}
	return t.putRaw(k.index, expiryKey(newExp, hash), []byte{})
}

// removeExpiring deletes the record under hash with all its index
// entries; it reports false when there is no such record.
func (t *Tx) removeExpiring(k expiring, hash []byte) (bool, error) {
	b, err := t.bucket(k.bucket)
	if err != nil {
		return false, err
	}
	raw := b.Get(hash)
	if raw == nil {
		return false, nil
	}
	exp, parties, err := k.decode(raw)
	if err != nil {
		return false, fmt.Errorf("store: decode %s/%x: %w", k.bucket, hash, err)
	}
	if err := t.delete(k.bucket, string(hash)); err != nil {
		return false, err
	}
	if err := t.unindex(k.parties, parties, hash); err != nil {
		return false, err
	}
	return true, t.delete(k.index, expiryKey(exp, hash))
}

// deleteExpired removes the records of kind k whose index says they expired
// at or before now, at most limit of them (all when limit is 0), earliest
// expiry first.
func (t *Tx) deleteExpired(k expiring, now time.Time, limit int) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	idx, err := t.bucket(k.index)
	if err != nil {
		return 0, err
	}
	end := expiryKey(now.Add(1), nil)
	var keys [][]byte
	c := idx.Cursor()
	for key, _ := c.First(); key != nil && string(key) < end && (limit == 0 || len(keys) < limit); key, _ = c.Next() {
		if len(key) < 8 { // not written by createExpiring: expiry ‖ hash
			return 0, fmt.Errorf("store: %s has a malformed key %x", k.index, key)
		}
		keys = append(keys, bytes.Clone(key))
	}
	for _, key := range keys {
		if _, err := t.removeExpiring(k, key[8:]); err != nil {
			return 0, err
		}
		// A record whose expiry moved has no entry here any more; a
		// dangling entry goes too.
		if err := t.delete(k.index, string(key)); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// Pending authorization requests.

func (r *authRequestRecord) request(hash []byte) *store.AuthRequest {
	return &store.AuthRequest{
		Hash: bytes.Clone(hash), Grant: r.grant(), State: r.State, CSRFHash: r.CSRFHash,
		BindingHash: r.BindingHash, Stage: store.AuthStage(r.Stage), ConsentShownAt: r.ConsentShownAt,
		ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt,
	}
}

func requestToRecord(r *store.AuthRequest) *authRequestRecord {
	return &authRequestRecord{
		grantRecord: grantToRecord(&r.Grant), State: r.State, CSRFHash: r.CSRFHash,
		BindingHash: r.BindingHash, Stage: string(r.Stage), ConsentShownAt: r.ConsentShownAt.UTC(),
		ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt,
	}
}

// CreateAuthRequest implements store.AuthFlowTx.
func (t *Tx) CreateAuthRequest(r *store.AuthRequest) error {
	if err := t.checkWrite(r); err != nil {
		return err
	}
	r.CreatedAt = t.stamp()
	rec := requestToRecord(r)
	return t.createExpiring(requestsKind, r.Hash, rec.ExpiresAt, requestParties(rec), rec)
}

// AuthRequest implements store.AuthFlowTx.
func (t *Tx) AuthRequest(hash []byte) (*store.AuthRequest, error) {
	var rec authRequestRecord
	ok, err := t.get(bucketAuthRequests, string(hash), &rec)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: authorization request", store.ErrNotFound)
	}
	return rec.request(hash), nil
}

// PutAuthRequest implements store.AuthFlowTx.
func (t *Tx) PutAuthRequest(r *store.AuthRequest) error {
	if err := t.checkWrite(r); err != nil {
		return err
	}
	old, err := t.AuthRequest(r.Hash)
	if err != nil {
		return err
	}
	r.CreatedAt = old.CreatedAt
	rec := requestToRecord(r)
	return t.replaceExpiring(requestsKind, r.Hash, old.ExpiresAt.UTC(), rec.ExpiresAt,
		requestParties(requestToRecord(old)), requestParties(rec), rec)
}

// DeleteAuthRequest implements store.AuthFlowTx.
func (t *Tx) DeleteAuthRequest(hash []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	if ok, err := t.removeExpiring(requestsKind, hash); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: authorization request", store.ErrNotFound)
	}
	return nil
}

// DeleteExpiredAuthRequests implements store.AuthFlowTx.
func (t *Tx) DeleteExpiredAuthRequests(now time.Time) (int, error) {
	return t.deleteExpired(requestsKind, now, 0)
}

// Authorization codes.

func (r *authCodeRecord) code(hash []byte) *store.AuthCode {
	return &store.AuthCode{
		Hash: bytes.Clone(hash), Grant: r.grant(), ExpiresAt: r.ExpiresAt,
		RedeemedAt: r.RedeemedAt, CreatedAt: r.CreatedAt,
	}
}

// CreateCode implements store.AuthFlowTx.
func (t *Tx) CreateCode(c *store.AuthCode) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	c.CreatedAt = t.stamp()
	rec := &authCodeRecord{grantRecord: grantToRecord(&c.Grant), ExpiresAt: c.ExpiresAt.UTC(), CreatedAt: c.CreatedAt}
	return t.createExpiring(codesKind, c.Hash, rec.ExpiresAt, codeParties(rec), rec)
}

// Code implements store.AuthFlowTx.
func (t *Tx) Code(hash []byte) (*store.AuthCode, error) {
	var rec authCodeRecord
	ok, err := t.get(bucketCodes, string(hash), &rec)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: authorization code", store.ErrNotFound)
	}
	return rec.code(hash), nil
}

// RedeemCode implements store.AuthFlowTx.
func (t *Tx) RedeemCode(hash []byte, at, keepUntil time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	var rec authCodeRecord
	ok, err := t.get(bucketCodes, string(hash), &rec)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: authorization code", store.ErrNotFound)
	}
	if !rec.RedeemedAt.IsZero() {
		return store.ErrCodeRedeemed
	}
	if at.IsZero() {
		return errors.New("store: RedeemCode needs the redemption time")
	}
	old, oldParties := rec.ExpiresAt, codeParties(&rec)
	rec.RedeemedAt = at.UTC()
	if keepUntil.After(rec.ExpiresAt) {
		rec.ExpiresAt = keepUntil.UTC()
	}
	return t.replaceExpiring(codesKind, hash, old, rec.ExpiresAt, oldParties, codeParties(&rec), &rec)
}

// DeleteExpiredCodes implements store.AuthFlowTx.
func (t *Tx) DeleteExpiredCodes(now time.Time) (int, error) {
	return t.deleteExpired(codesKind, now, 0)
}

// Login sessions.

// CreateSession implements store.AuthFlowTx.
func (t *Tx) CreateSession(s *store.Session) error {
	if err := t.checkWrite(s); err != nil {
		return err
	}
	s.CreatedAt = t.stamp()
	rec := &sessionRecord{Username: s.Username, AuthTime: s.AuthTime.UTC(), ExpiresAt: s.ExpiresAt.UTC(), CreatedAt: s.CreatedAt}
	return t.createExpiring(sessionsKind, s.Hash, rec.ExpiresAt, sessionParties(rec), rec)
}

// Session implements store.AuthFlowTx.
func (t *Tx) Session(hash []byte) (*store.Session, error) {
	var rec sessionRecord
	ok, err := t.get(bucketSessions, string(hash), &rec)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: session", store.ErrNotFound)
	}
	return &store.Session{
		Hash: bytes.Clone(hash), Username: rec.Username, AuthTime: rec.AuthTime,
		ExpiresAt: rec.ExpiresAt, CreatedAt: rec.CreatedAt,
	}, nil
}

// DeleteSession implements store.AuthFlowTx.
func (t *Tx) DeleteSession(hash []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	if ok, err := t.removeExpiring(sessionsKind, hash); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: session", store.ErrNotFound)
	}
	return nil
}

// DeleteExpiredSessions implements store.AuthFlowTx.
func (t *Tx) DeleteExpiredSessions(now time.Time) (int, error) {
	return t.deleteExpired(sessionsKind, now, 0)
}

// SweepExpired implements store.SweepTx.
func (t *Tx) SweepExpired(now time.Time, limit int) (store.Swept, error) {
	if err := t.writable(); err != nil {
		return store.Swept{}, err
	}
	kind := func(k expiring) func(int) (int, error) {
		return func(n int) (int, error) { return t.deleteExpired(k, now, n) }
	}
	n, err := store.SweepKinds(limit, func(n int) (int, error) { return t.deleteExpiredTokens(now, n) },
		kind(requestsKind), kind(codesKind), kind(sessionsKind))
	if err != nil || n.Total() >= limit {
		return n, err
	}
	n.AdminRequests, err = t.expireAdminRequests(now, limit-n.Total())
	if err != nil {
		return store.Swept{}, err
	}
	return n, nil
}

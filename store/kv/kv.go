package kv

import (
	"encoding/json"
	"time"

	"github.com/signd/signd/store"
)

// Backend is one transaction of a key-value backend: named buckets of
// byte keys in byte order, as bbolt has them.
type Backend interface {
	// Writable returns nil in a read-write transaction, store.ErrReadOnly
	// in a read-only one, or the backend's own error once it has ended.
	Writable() error
	// Bucket returns the named bucket, or nil if it is missing (a store
	// that lost a bucket is damaged).
	Bucket(name string) Bucket
}

// Bucket is one kind of record within a transaction. A key passed to any
// method is only read during the call: the backend copies what it keeps.
type Bucket interface {
	// Get returns the value of key, or nil if it is absent. The value is
	// valid until the transaction ends and must not be modified.
	Get(key []byte) []byte
	// Put stores key → value; value must not change until the transaction
	// ends.
	Put(key, value []byte) error
	Delete(key []byte) error
	// ForEach calls fn with every entry in key order.
	ForEach(fn func(k, v []byte) error) error
	Cursor() Cursor
	// Last returns the last entry (the audit log's head), or a nil key
	// when the bucket is empty: Cursor().Last() without handing a cursor
	// out through an interface (which costs bbolt an allocation).
	Last() (key, value []byte)
}

// Cursor walks a bucket in key order; a nil key is the end. bbolt's
// *Cursor has exactly these methods.
type Cursor interface {
	First() (key, value []byte)
	Last() (key, value []byte)
	Seek(seek []byte) (key, value []byte)
	Next() (key, value []byte)
}

// Bucket names, one per kind of record. Together with the buckets of
// authflow.go, revoke.go and audit.go, BucketNames lists them all.
const (
	// BucketMeta holds single values: the revocation generation, and
	// whatever the backend keeps of its own (bbolt: the schema version).
	BucketMeta         = "meta"
	bucketUsers        = "users"
	bucketProofs       = "proofs"
	bucketClients      = "clients"
	bucketCredentials  = "credentials"
	bucketCredsByOwner = "credentials_by_owner"
	bucketTokens       = "tokens"
	bucketTokensByCode = "tokens_by_code"
	bucketTokensByExp  = "tokens_by_expiry"
	bucketOIDCKeys     = "oidc_keys"
	// BucketSecrets holds named random keys the services need across
	// restarts (the CSC page-token MAC key): name → raw key bytes.
	BucketSecrets = "secrets"
)

// BucketNames is the registry of buckets a store holds. A new kind of
// record (auth codes, tokens, SAD, audit log) adds its bucket here; a bbolt
// file gets it at its next Open, so a new bucket alone needs no schema
// bump.
func BucketNames() []string {
	return []string{
		BucketMeta,
		bucketUsers,
		bucketProofs,
		bucketClients,
		bucketCredentials,
		bucketCredsByOwner,
		bucketTokens,
		bucketTokensByCode,
		bucketTokensByExp,
		bucketAudit,
		bucketAuditChains, // the registry of the audit log's chains (audit.go)
		BucketSecrets,
		bucketAuthRequests, // pending requests, codes, sessions (authflow.go)
		bucketAuthRequestsByExp,
		bucketCodes,
		bucketCodesByExp,
		bucketSessions,
		bucketSessionsByExp,
		bucketOIDCKeys,
		bucketTokensByParty, // revocation by user, client, credential (revoke.go)
		bucketCodesByParty,
		bucketAuthRequestsByParty,
		bucketSessionsByParty,
		bucketAdminRequests, // dual control (adminrequest.go)
	}
}

// RecordKind is a bucket of records and how a stored value decodes.
type RecordKind struct {
	Bucket string
	// Decode reports whether a stored value decodes as a record.
	Decode func([]byte) error
}

// RecordKinds are the buckets of records (not indexes) and how each
// decodes: the check of a store's records.
func RecordKinds() []RecordKind {
	return []RecordKind{
		{bucketUsers, decodeJSON[userRecord]},
		{bucketClients, decodeJSON[clientRecord]},
		{bucketCredentials, decodeJSON[credentialRecord]},
		{bucketTokens, func(v []byte) error { _, err := decodeToken(v); return err }}, // binary or JSON (codec.go)
		{bucketAuthRequests, decodeJSON[authRequestRecord]},
		{bucketCodes, decodeJSON[authCodeRecord]},
		{bucketSessions, decodeJSON[sessionRecord]},
		{bucketOIDCKeys, decodeJSON[signingKeyRecord]},
		{bucketAdminRequests, decodeJSON[adminRequestRecord]},
		{bucketAuditChains, decodeJSON[auditChainRecord]},
	}
}

func decodeJSON[T any](v []byte) error { return json.Unmarshal(v, new(T)) }

// NewTx returns the store transaction over b; now is the store clock.
func NewTx(b Backend, now func() time.Time) *Tx { return &Tx{kv: b, now: now} }

var _ store.Tx = (*Tx)(nil)

package etcd

// Bucket names, one per kind of record: the same names as store/bolt's
// buckets, each a key range prefix "r/" name "/" (doc.go).
const (
	bucketUsers        = "users"
	bucketProofs       = "proofs"
	bucketClients      = "clients"
	bucketCredentials  = "credentials"
	bucketCredsByOwner = "credentials_by_owner"
	bucketTokens       = "tokens"
	bucketTokensByCode = "tokens_by_code"
	bucketTokensByExp  = "tokens_by_expiry"
	bucketOIDCKeys     = "oidc_keys"
	// bucketMeta holds single values: the revocation generation.
	bucketMeta = "meta"
)

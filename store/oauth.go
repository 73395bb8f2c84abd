package store

import (
	"crypto/sha256"
	"time"
)

// TokenKind tells an access token from a SAD.
type TokenKind string

// Token kinds.
const (
	// TokenAccess is a Bearer access token (scope service, or an OIDC flow).
	TokenAccess TokenKind = "access"
	// TokenSAD is Signature Activation Data (scope credential): bound to
	// one credential and its hashes, consumed by one signHash.
	TokenSAD TokenKind = "sad"
	// TokenRefresh is a refresh token (RFC 6749 §6) issued by CSC
	// auth/login with rememberMe. It is never a bearer credential. Every
	// token of one login carries the login's family in CodeHash, so that
	// DeleteTokensByCode revokes the family; a rotated refresh token stays
	// stored with RotatedAt set, so that its reuse is recognised (RFC 9700
	// §4.14.2).
	TokenRefresh TokenKind = "refresh"
)

// Fingerprint is the key under which a bearer value (token, SAD, code) is
// stored: SHA-256 of the value. The value itself is never stored.
func Fingerprint(value string) []byte {
	sum := sha256.Sum256([]byte(value))
	return sum[:]
}

// Token is an issued access token or SAD, stored under the fingerprint of
// its value.
type Token struct {
	Hash         []byte    // Fingerprint(value); the key
	Kind         TokenKind // access or sad
	ClientID     string
	Username     string
	Scopes       []string
	CodeHash     []byte    // fingerprint of the authorization code that issued it (reuse revokes)
	CredentialID string    // SAD only
	Hashes       [][]byte  // SAD only: the authorized digests (raw bytes)
	AuthTime     time.Time // when the user authenticated
	RequestedAt  time.Time // when the authorization request arrived (OIDC "rat")
	// Consented is the code's Grant.Consented: what the user was shown and
	// approved. A resource server releases data that needs consent only
	// while it still matches this record. Nil (also in records written
	// before the field existed) means nothing was approved.
	Consented ConsentRecord
	ExpiresAt time.Time
	// RotatedAt is set on a refresh token that was exchanged for a new one
	// (zero otherwise, and in records written before the field existed):
	// it stays stored until it expires, and presenting it again revokes its
	// family.
	RotatedAt time.Time
	// SecretGeneration (SAD only) is the user's User.SecretGeneration when
	// the SAD was issued: a SAD whose user's generation moved since (a new
	// PIN or password, a revocation) is refused and never given back. 0
	// in records written before the field existed.
	SecretGeneration uint64
	CreatedAt        time.Time // set by the store
}

// Validate checks the fields every backend requires.
func (t *Token) Validate() error {
	sad := t.Kind == TokenSAD
	err := firstBroken(
		fingerprint("token hash", t.Hash),
		rule{t.Kind == TokenAccess || sad || t.Kind == TokenRefresh, "token kind %q", string(t.Kind)},
		must(t.ClientID != "" && t.Username != "", "token needs a client and a user"),
		must(!t.ExpiresAt.IsZero(), "token needs an expiry"),
		must(len(t.CodeHash) == 0 || len(t.CodeHash) == sha256.Size, "code hash must be 32 bytes"),
		must(!sad || t.CredentialID != "" && len(t.Hashes) != 0, "a SAD needs a credential and at least one hash"),
		must(sad || t.CredentialID == "" && len(t.Hashes) == 0, "an access or refresh token carries no credential or hashes"),
		must(t.Kind == TokenRefresh || t.RotatedAt.IsZero(), "only a refresh token is rotated"),
	)
	if err != nil {
		return err
	}
	return t.Consented.validate("token")
}

// TokenReader looks up one access token or SAD.
type TokenReader interface {
	// Token returns the token with this fingerprint, expired or not (the
	// caller decides what expiry means); ErrNotFound if absent.
	Token(hash []byte) (*Token, error)
}

// TokenTx holds access tokens and SADs.
type TokenTx interface {
	TokenReader
	// CreateToken stores a new token; ErrAlreadyExists if the hash exists.
	CreateToken(t *Token) error
	// DeleteToken removes a token (revocation, SAD consumption);
	// ErrNotFound if absent.
	DeleteToken(hash []byte) error
	// DeleteTokensByCode removes every token issued by the code with this
	// fingerprint and returns how many there were (code reuse revokes them).
	DeleteTokensByCode(codeHash []byte) (int, error)
	// DeleteExpiredTokens removes tokens whose ExpiresAt is at or before now
	// and returns how many; the cost follows the number removed (an expiry
	// index), not the number stored.
	DeleteExpiredTokens(now time.Time) (int, error)
}

// OAuthTx is the part of Tx that holds the authorization server's records.
// Every method runs inside the caller's transaction, so a caller can, in one
// Update, consume a SAD and append the audit entry of its use.
type OAuthTx interface {
	// TokenTx holds access tokens and SADs.
	TokenTx
	// AuthFlowTx holds pending requests, codes and login sessions
	// (authflow.go).
	AuthFlowTx
	// RevokeTx revokes what hangs on a user, client or credential
	// (revoke.go).
	RevokeTx
	// RevocationReader reads the generation those writes raise (revoke.go).
	RevocationReader
	// SweepTx removes expired records in bounded portions (sweep.go).
	SweepTx
}

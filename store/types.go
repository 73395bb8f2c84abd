package store

import "time"

// UserStatus says whether a user may authenticate.
type UserStatus string

// User statuses.
const (
	UserActive   UserStatus = "active"
	UserDisabled UserStatus = "disabled"
)

// User is a local account: login credentials, signing PIN, lockout state and
// the identity attributes the OIDC provider releases.
type User struct {
	// ID is random and immutable (pairwise OIDC subjects derive from it); the
	// caller sets it on create (see [NewID]). PutUser refuses to change it.
	ID string
	// Username is the primary key: 1–64 characters of [A-Za-z0-9._@-],
	// compared byte for byte (case-sensitive).
	Username string
	Status   UserStatus
	// PasswordHash is a PHC-encoded argon2id hash; "" means no password is
	// set and password login is impossible.
	PasswordHash string
	// PINHash is a PHC-encoded argon2id hash; "" means no signing PIN.
	PINHash string
	// TOTPSecret is base32 (RFC 4648, padding optional); "" means no TOTP.
	TOTPSecret string
	// TOTPLastStep is the RFC 6238 time step (Unix time / 30 s) of the last
	// one-time code accepted for the user; a code of that step or an
	// earlier one is refused (a code is accepted once). 0 when none was
	// accepted, also in records written before the field existed.
	TOTPLastStep int64
	// FailedPasswords counts wrong passwords (and one-time codes) since the
	// last successful login or the end of the last timed lock.
	FailedPasswords int
	// PasswordLocked is the permanent lock of password login: only an admin
	// lifts it (user unlock, set-password). It is set when a lock follows
	// oauth.lockout.permanent_after timed ones, and it is what records
	// written by a signd without timed locks carry.
	PasswordLocked bool
	// PasswordLockedUntil is the end of a timed lock (NIST SP 800-63B
	// §5.2.2): until then no password is checked. The zero time means none;
	// a time in the past is a lock that has ended. Zero in records written
	// before the field existed.
	PasswordLockedUntil time.Time
	// PasswordLockouts counts the timed locks since the last successful
	// login: each lasts twice as long as the one before (up to
	// oauth.lockout.max). 0 in records written before the field existed.
	PasswordLockouts int
	// FailedPINs and PINLocked are the signing PIN's counter and lock (a
	// smart card's rule: the lock holds until an admin lifts it).
	FailedPINs int
	PINLocked  bool
	// SecretGeneration counts the changes of the user's secrets: the store
	// raises it, in the same write transaction, whenever PutUser changes
	// PasswordHash or PINHash and whenever Tx.RevokeUser or
	// Tx.RevokeUserSigning runs for the user; PutUser keeps the stored
	// value whatever the caller passes. A password or PIN check remembers
	// the generation it checked against, and the transaction that acts on
	// the check (a login session, a code, a SAD) refuses when it moved: a
	// reset that committed while the old secret was being hashed wins.
	// SADs carry the generation they were issued under (Token). 0 in
	// records written before the field existed.
	SecretGeneration uint64
	// EnrollmentHash is the Fingerprint of the user's one-time enrollment
	// link (admin: `POST /users` with enroll), nil when none is open: the
	// link itself is never stored. EnrollmentExpires is when it ends. The
	// transaction that sets the user's first secrets through the link
	// clears both, so the link serves once.
	EnrollmentHash    []byte
	EnrollmentExpires time.Time
	Email             string
	EmailVerified     bool
	// Claims holds identity attributes (given_name, birthdate, ...), keyed by
	// claim name.
	Claims map[string]string
	// Proofs is metadata only and is maintained by Tx.PutProof: it must be
	// empty on CreateUser, and PutUser keeps the stored list whatever the
	// caller passes. Content is read with Tx.Proof.
	Proofs []ProofRef
	// CreatedAt and UpdatedAt are set by the store.
	CreatedAt, UpdatedAt time.Time
}

// Proof content types accepted by Tx.PutProof; no other type is stored.
const (
	ProofJPEG = "image/jpeg"
	ProofPNG  = "image/png"
	ProofPDF  = "application/pdf"
)

// MaxProofSize is the largest proof document Tx.PutProof accepts, in bytes.
const MaxProofSize = 10 << 20

// ProofRef describes one proof document of a user.
type ProofRef struct {
	ID          string // 1–128 printable ASCII characters, no spaces
	ContentType string // ProofJPEG, ProofPNG or ProofPDF
	Size        int64  // content length in bytes; set by the store
	SHA256      string // lowercase hex SHA-256 of the content; set by the store
}

// Proof is a proof document (scan of an identity document, ...) with its
// content.
type Proof struct {
	ProofRef
	Content []byte
}

// Client is a registered OAuth 2.0 / OIDC client.
type Client struct {
	ID           string   // 1–128 printable ASCII characters, no spaces
	Name         string   // shown on the consent page
	SecretHash   string   // HashSecret of the client secret; required
	RedirectURIs []string // at least one; absolute, no fragment; matched exactly
	Scopes       []string // scopes the client may request
	// SectorIdentifier is the pairwise-subject sector; "" means the host of
	// the redirect URIs.
	SectorIdentifier string
	RequirePKCE      bool
	// IDTokenSignedResponseAlg is the JWS algorithm of the client's ID
	// tokens (OpenID Connect Dynamic Client Registration §2,
	// id_token_signed_response_alg): one of JWSAlgorithms, or "" for the
	// provider's default (oidc.signing_alg). Records written before it
	// existed read as "".
	IDTokenSignedResponseAlg string
	// CreatedAt and UpdatedAt are set by the store.
	CreatedAt, UpdatedAt time.Time
}

// CredentialStatus is the life-cycle state of a signing credential.
type CredentialStatus string

// Credential statuses.
const (
	// CredentialPending: the key exists in the HSM but has no certificate yet
	// (Chain must be empty).
	CredentialPending CredentialStatus = "pending"
	// CredentialEnabled: usable for signing (Chain must not be empty).
	CredentialEnabled CredentialStatus = "enabled"
	// CredentialDisabled: switched off by an admin or by its owner
	// (Credential.DisabledBy).
	CredentialDisabled CredentialStatus = "disabled"
)

// Who disabled a credential (Credential.DisabledBy).
const (
	// DisabledByAdmin: an operator (`signd credential disable`). The
	// owner cannot enable it again. A disabled credential stored before
	// DisabledBy existed reads as "" and counts as this.
	DisabledByAdmin = "admin"
	// DisabledByOwner: the owner, on the account page; the owner (or an
	// admin) may enable it again.
	DisabledByOwner = "owner"
)

// Credential algorithms (the key type and size of the credential's key
// pair, as enrollment's --key-type names them) and their key sizes.
const (
	AlgRSA2048 = "rsa-2048"
	AlgRSA3072 = "rsa-3072"
	AlgRSA4096 = "rsa-4096"
	AlgECP256  = "ec-p256" // ECDSA on NIST P-256 (secp256r1)
	AlgECP384  = "ec-p384" // ECDSA on NIST P-384 (secp384r1)
	AlgECP521  = "ec-p521" // ECDSA on NIST P-521 (secp521r1)
)

// Algorithms lists the credential algorithms, in the order operators see
// them.
func Algorithms() []string {
	return []string{AlgRSA2048, AlgRSA3072, AlgRSA4096, AlgECP256, AlgECP384, AlgECP521}
}

// AlgorithmKeyBits returns the key length in bits of a credential algorithm
// (the RSA modulus or the EC curve size), or 0 if alg is not one of
// Algorithms().
func AlgorithmKeyBits(alg string) int {
	switch alg {
	case AlgRSA2048:
		return 2048
	case AlgRSA3072:
		return 3072
	case AlgRSA4096:
		return 4096
	case AlgECP256:
		return 256
	case AlgECP384:
		return 384
	case AlgECP521:
		return 521
	}
	return 0
}

// AlgorithmIsEC reports whether alg is an ECDSA credential algorithm.
func AlgorithmIsEC(alg string) bool { return alg == AlgECP256 || alg == AlgECP384 || alg == AlgECP521 }

// Credential is a signing key pair held in the HSM plus its certificate chain.
type Credential struct {
	ID        string // 1–128 printable ASCII characters, no spaces (see NewID)
	Owner     string // username of an existing user
	KeyID     []byte // HSM CKA_ID, 1–64 bytes; immutable
	Label     string // HSM CKA_LABEL
	Algorithm string // one of Algorithms() (AlgRSA2048 …, AlgECP256, AlgECP384); immutable
	KeyBits   int    // must match Algorithm
	// Chain holds DER certificates, leaf first; empty while pending.
	Chain       [][]byte
	Status      CredentialStatus
	DisabledBy  string // DisabledByAdmin, DisabledByOwner, or "" (enabled, pending, or disabled by an admin before this field existed)
	Description string
	// Multisign caps numSignatures, the hashes one authorization (SAD)
	// covers (CSC v1 §11.5 multisign): 1–MaxMultisign. 0, as in records
	// written before the field existed, reads as 1.
	Multisign int
	// AuthMode is how a SAD for the credential is obtained (CSC v1 §11.5
	// authMode): AuthOAuth2Code or AuthExplicit. "", as in records written
	// before the field existed, reads as AuthOAuth2Code.
	AuthMode AuthMode
	// CreatedAt and UpdatedAt are set by the store.
	CreatedAt, UpdatedAt time.Time
}

// AuthMode is how a credential's signatures are authorized (CSC v1 §11.5).
type AuthMode string

// Authorization modes.
const (
	// AuthOAuth2Code: the OAuth 2.0 code flow with scope "credential"
	// (consent page and signing PIN) issues the SAD.
	AuthOAuth2Code AuthMode = "oauth2code"
	// AuthExplicit: credentials/authorize (CSC v1 §11.6) issues the SAD
	// against the signing PIN (and the TOTP code where the user has one).
	AuthExplicit AuthMode = "explicit"
)

// MaxMultisign is the largest Multisign a credential may have.
const MaxMultisign = 1000

// SetDefaults gives the fields that records written before they existed
// lack their defaults: Multisign 1 and AuthMode AuthOAuth2Code. Backends
// call it on every credential they return.
func (c *Credential) SetDefaults() {
	if c.Multisign == 0 {
		c.Multisign = 1
	}
	if c.AuthMode == "" {
		c.AuthMode = AuthOAuth2Code
	}
}

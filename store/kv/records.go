package kv

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// The on-disk JSON shape of each record kind. Field names are part of the
// file format: renaming one needs a schema migration. A user record
// written before timed locks existed has no password_locked_until and no
// password_lockouts: no timed lock, none before; one written before secret
// generations existed has no secret_generation: generation 0.

type userRecord struct {
	ID              string            `json:"id"`
	Username        string            `json:"username"`
	Status          string            `json:"status"`
	PasswordHash    string            `json:"password_hash,omitempty"`
	PINHash         string            `json:"pin_hash,omitempty"`
	TOTPSecret      string            `json:"totp_secret,omitempty"`
	TOTPLastStep    int64             `json:"totp_last_step,omitempty"`
	FailedPasswords int               `json:"failed_passwords,omitempty"`
	PasswordLocked  bool              `json:"password_locked,omitempty"`
	LockedUntil     *time.Time        `json:"password_locked_until,omitempty"`
	Lockouts        int               `json:"password_lockouts,omitempty"`
	FailedPINs      int               `json:"failed_pins,omitempty"`
	PINLocked       bool              `json:"pin_locked,omitempty"`
	SecretGen       uint64            `json:"secret_generation,omitempty"`
	EnrollmentHash  []byte            `json:"enrollment_hash,omitempty"`
	EnrollExpires   *time.Time        `json:"enrollment_expires,omitempty"`
	Email           string            `json:"email,omitempty"`
	EmailVerified   bool              `json:"email_verified,omitempty"`
	Claims          map[string]string `json:"claims,omitempty"`
	Proofs          []proofRefRecord  `json:"proofs,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
}

type proofRefRecord struct {
	ID          string `json:"id"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
}

type clientRecord struct {
	ID               string   `json:"id"`
	Name             string   `json:"name,omitempty"`
	SecretHash       string   `json:"secret_hash"`
	RedirectURIs     []string `json:"redirect_uris"`
	Scopes           []string `json:"scopes,omitempty"`
	SectorIdentifier string   `json:"sector_identifier,omitempty"`
	RequirePKCE      bool     `json:"require_pkce,omitempty"`
	// IDTokenAlg is absent in records written before it existed: the
	// provider's default algorithm.
	IDTokenAlg string    `json:"id_token_signed_response_alg,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

type credentialRecord struct {
	ID          string   `json:"id"`
	Owner       string   `json:"owner"`
	KeyID       []byte   `json:"key_id"`
	Label       string   `json:"label,omitempty"`
	Algorithm   string   `json:"algorithm"`
	KeyBits     int      `json:"key_bits"`
	Chain       [][]byte `json:"chain,omitempty"`
	Status      string   `json:"status"`
	DisabledBy  string   `json:"disabled_by,omitempty"`
	Description string   `json:"description,omitempty"`
	// Multisign and AuthMode are absent in records written before they
	// existed; credential() reads them as 1 and oauth2code.
	Multisign int       `json:"multisign,omitempty"`
	AuthMode  string    `json:"auth_mode,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// The conversions copy every slice and map so that neither side aliases the
// other.

func userToRecord(u *store.User) *userRecord {
	r := &userRecord{
		ID: u.ID, Username: u.Username, Status: string(u.Status),
		PasswordHash: u.PasswordHash, PINHash: u.PINHash, TOTPSecret: u.TOTPSecret, TOTPLastStep: u.TOTPLastStep,
		FailedPasswords: u.FailedPasswords, PasswordLocked: u.PasswordLocked, Lockouts: u.PasswordLockouts,
		FailedPINs: u.FailedPINs, PINLocked: u.PINLocked, SecretGen: u.SecretGeneration,
		Email: u.Email, EmailVerified: u.EmailVerified,
		Claims:    maps.Clone(u.Claims),
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
	}
	if !u.PasswordLockedUntil.IsZero() {
		until := u.PasswordLockedUntil.UTC()
		r.LockedUntil = &until
	}
	if len(u.EnrollmentHash) > 0 {
		exp := u.EnrollmentExpires.UTC().Round(0)
		r.EnrollmentHash, r.EnrollExpires = bytes.Clone(u.EnrollmentHash), &exp
	}
	for _, p := range u.Proofs {
		r.Proofs = append(r.Proofs, proofRefRecord(p))
	}
	return r
}

func (r *userRecord) user() *store.User {
	u := &store.User{
		ID: r.ID, Username: r.Username, Status: store.UserStatus(r.Status),
		PasswordHash: r.PasswordHash, PINHash: r.PINHash, TOTPSecret: r.TOTPSecret, TOTPLastStep: r.TOTPLastStep,
		FailedPasswords: r.FailedPasswords, PasswordLocked: r.PasswordLocked, PasswordLockouts: r.Lockouts,
		FailedPINs: r.FailedPINs, PINLocked: r.PINLocked, SecretGeneration: r.SecretGen,
		Email: r.Email, EmailVerified: r.EmailVerified,
		Claims:    maps.Clone(r.Claims),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.LockedUntil != nil {
		u.PasswordLockedUntil = *r.LockedUntil
	}
	if len(r.EnrollmentHash) > 0 && r.EnrollExpires != nil {
		u.EnrollmentHash, u.EnrollmentExpires = bytes.Clone(r.EnrollmentHash), *r.EnrollExpires
	}
	for _, p := range r.Proofs {
		u.Proofs = append(u.Proofs, store.ProofRef(p))
	}
	return u
}

func clientToRecord(c *store.Client) *clientRecord {
	return &clientRecord{
		ID: c.ID, Name: c.Name, SecretHash: c.SecretHash,
		RedirectURIs: slices.Clone(c.RedirectURIs), Scopes: slices.Clone(c.Scopes),
		SectorIdentifier: c.SectorIdentifier, RequirePKCE: c.RequirePKCE, IDTokenAlg: c.IDTokenSignedResponseAlg,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

func (r *clientRecord) client() *store.Client {
	return &store.Client{
		ID: r.ID, Name: r.Name, SecretHash: r.SecretHash,
		RedirectURIs: slices.Clone(r.RedirectURIs), Scopes: slices.Clone(r.Scopes),
		SectorIdentifier: r.SectorIdentifier, RequirePKCE: r.RequirePKCE, IDTokenSignedResponseAlg: r.IDTokenAlg,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func credentialToRecord(c *store.Credential) *credentialRecord {
	return &credentialRecord{
		ID: c.ID, Owner: c.Owner, KeyID: slices.Clone(c.KeyID), Label: c.Label,
		Algorithm: c.Algorithm, KeyBits: c.KeyBits, Chain: cloneChain(c.Chain),
		Status: string(c.Status), DisabledBy: c.DisabledBy, Description: c.Description,
		Multisign: c.Multisign, AuthMode: string(c.AuthMode),
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

func (r *credentialRecord) credential() *store.Credential {
	c := &store.Credential{
		ID: r.ID, Owner: r.Owner, KeyID: slices.Clone(r.KeyID), Label: r.Label,
		Algorithm: r.Algorithm, KeyBits: r.KeyBits, Chain: cloneChain(r.Chain),
		Status: store.CredentialStatus(r.Status), DisabledBy: r.DisabledBy, Description: r.Description,
		Multisign: r.Multisign, AuthMode: store.AuthMode(r.AuthMode),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	c.SetDefaults()
	return c
}

func cloneChain(chain [][]byte) [][]byte {
	if chain == nil {
		return nil
	}
	out := make([][]byte, len(chain))
	for i, der := range chain {
		out[i] = slices.Clone(der)
	}
	return out
}

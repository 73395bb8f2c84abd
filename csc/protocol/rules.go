package protocol

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// Profile names of the authorization server's CSC scopes, which are also
// the scopes: "service" for the API's Bearer, "credential" for a SAD.
const (
	ScopeService    = "service"
	ScopeCredential = "credential"
)

// MaxDescription bounds the description a client may give with an
// authorization (CSC v1 §11.9).
const MaxDescription = 500

// Revocation is the cached revocation status of certificate chains
// (*certstatus.Checker satisfies it). Status only reads a cache: it is
// called on the signing path.
type Revocation interface {
	// Status returns the chain's last known status (certstatus.Valid,
	// Revoked or Suspended) and whether that answer is current; a chain
	// whose certificates name no OCSP responder or CRL is Valid and
	// current.
	Status(chain [][]byte) (certstatus.Status, bool)
}

// Certs decides about credentials' certificates: whether one is valid now
// and not revoked (Revocation, nil = the validity dates only), with its
// leaf parsed once (Leaf). One Certs is shared by the methods of a
// Handler; its zero value with a Revocation is ready.
type Certs struct {
	Revocation Revocation
	leaves     leafCache
}

// Leaf returns the parsed leaf certificate of chain, from the cache. The
// result is shared: callers must not modify it.
func (c *Certs) Leaf(cred *store.Credential) (*x509.Certificate, error) {
	leaf, err := c.leaves.parse(cred.Chain[0])
	if err != nil {
		return nil, fmt.Errorf("csc: credential %s: certificate: %w", cred.ID, err)
	}
	return leaf, nil
}

// Credential reads the credential id in tx and checks that username may
// sign with it now (Signable); an unknown one is refused as "Invalid
// parameter credentialID", with the audit reason "unknown credential".
func (c *Certs) Credential(tx store.CredentialReader, id, username string, now time.Time) (*store.Credential, *oauth.Error, string, error) {
	cred, err := tx.Credential(id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, Invalid("credentialID"), "unknown credential", nil
	case err != nil:
		return nil, nil, "", err
	}
	e, why, err := c.Signable(cred, username, now)
	return cred, e, why, err
}

// Signable checks that username may sign with cred now: it is theirs,
// enabled, with a certificate valid at now and not revoked, suspended or
// of unknown status (Revocation). It returns the refusal with its audit
// reason, or an error when the certificate cannot be read.
func (c *Certs) Signable(cred *store.Credential, username string, now time.Time) (*oauth.Error, string, error) {
	switch {
	case cred.Owner != username:
		return Invalid("credentialID"), "credential of another user", nil
	case !UsableBy(cred, username):
		return Invalid("credentialID"), "credential pending (no certificate)", nil
	case cred.Status != store.CredentialEnabled:
		return BadRequest(DescCredDisabled), "credential disabled", nil
	}
	leaf, err := c.Leaf(cred)
	if err != nil {
		return nil, "", err
	}
	if msg := CertRefusal(leaf, now); msg != "" {
		return BadRequest(msg), "certificate not valid now", nil
	}
	if msg, reason := RevocationRefusal(c.Revocation, cred.Chain, leaf); msg != "" {
		return BadRequest(msg), reason, nil
	}
	return nil, "", nil
}

// UsableBy reports whether the CSC API shows cred to username: it must be
// theirs and have a certificate (pending credentials are not offered).
func UsableBy(cred *store.Credential, username string) bool {
	return cred.Owner == username && cred.Status != store.CredentialPending && len(cred.Chain) > 0
}

// CertRefusal returns the specification's refusal for signing with leaf at
// now, or "" while it is valid. Every refusal names the certificate by its
// subject DN in RFC 4514 form (pkix.Name.String), the very string
// credentials/info reports as subjectDN, rather than the specification's
// "O=…,CN=…" sketch.
func CertRefusal(leaf *x509.Certificate, now time.Time) string {
	switch {
	case now.After(leaf.NotAfter):
		return "Signing certificate '" + leaf.Subject.String() + "' is expired."
	case now.Before(leaf.NotBefore):
		return "Signing certificate '" + leaf.Subject.String() + "' is not yet valid."
	}
	return ""
}

// Revoked reports whether rev keeps chain from signing (RevocationRefusal).
func Revoked(rev Revocation, chain [][]byte, leaf *x509.Certificate) bool {
	msg, _ := RevocationRefusal(rev, chain, leaf)
	return msg != ""
}

// RevocationRefusal returns the refusal for signing with chain while rev
// reports it revoked, suspended or without a current answer (hard fail,
// see package certstatus), or "" (also when rev is nil).
// The second result is the audit reason.
func RevocationRefusal(rev Revocation, chain [][]byte, leaf *x509.Certificate) (string, string) {
	if rev == nil {
		return "", ""
	}
	status, current := rev.Status(chain)
	switch {
	case status == certstatus.Revoked:
		return "Signing certificate '" + leaf.Subject.String() + "' is revoked.", "certificate revoked"
	case status == certstatus.Suspended:
		return "Signing certificate '" + leaf.Subject.String() + "' is suspended.", "certificate suspended"
	case !current:
		return "The revocation status of signing certificate '" + leaf.Subject.String() + "' could not be verified.",
			"certificate status unknown (no current OCSP or CRL answer)"
	}
	return "", ""
}

// RevokedSAD says why a SAD that passed every binding check may no longer
// be used: its client was removed, its user removed or disabled, or the
// user's secret generation moved (a new PIN or password, a revocation of
// the user's grants: store.User.SecretGeneration) since it was issued.
// Those admin actions revoke the SAD in their own transaction; checking
// here, in the transaction that consumes it (or gives it back after a
// failed signature), holds even when one landed after the bearer check or
// missed the SAD (it was consumed, or not yet written, when the action
// committed).
func RevokedSAD(tx Tx, sad *store.Token) (string, error) {
	if _, err := tx.Client(sad.ClientID); errors.Is(err, store.ErrNotFound) {
		return "client removed (burned)", nil
	} else if err != nil {
		return "", err
	}
	u, err := tx.User(sad.Username)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && u.Status != store.UserActive:
		return "user removed or disabled (burned)", nil
	case err != nil:
		return "", err
	case u.SecretGeneration != sad.SecretGeneration:
		return "PIN or password changed since it was issued (burned)", nil
	}
	return "", nil
}

// SameHashes reports whether a and b hold the same digests the same number
// of times, in any order: a SAD covers exactly its hashes, no more, no
// fewer (the authorize hash list is order-independent).
func SameHashes(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	sa, sb := slices.Clone(a), slices.Clone(b)
	slices.SortFunc(sa, bytes.Compare)
	slices.SortFunc(sb, bytes.Compare)
	for i := range sa {
		if !bytes.Equal(sa[i], sb[i]) {
			return false
		}
	}
	return true
}

// maxCredentialIDLen is the longest credential ID the store accepts (its
// database keys are at most 128 bytes).
const maxCredentialIDLen = 128

// AuditCredential is how the audit log and the log name a requested
// credential ID: as sent, or, when longer than any stored ID can be, as
// "sha256:" and its hex digest, so that the client cannot grow entries.
func AuditCredential(id string) string {
	if len(id) <= maxCredentialIDLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

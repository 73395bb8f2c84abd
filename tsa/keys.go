package tsa

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/signd/signd/store"
)

// Which keys of the token may sign time-stamp tokens. A certificate under
// the TSA label names its key by CKA_ID only, and any key of the token has
// one: were that enough, one certificate (a security officer's act, or an
// object written into the token by hand) would have the TSA sign with a
// user's credential key, without the user's SAD — the sole control the
// credential promises. So a TSA key must be one `signd tsa enroll` made:
//
//   - its CKA_LABEL is "<label>-<id>" (IsKeyLabel); the label is set when
//     the key is generated, and a frozen key's label cannot change
//     (hsm/keyobj), and
//   - no record of the store holds its CKA_ID (KeyHolder): no credential,
//     no OIDC signing key. This covers a credential labelled so before
//     the TSA label was reserved.
//
// The TSA label is reserved for it: a credential may not be labelled
// "<label>" or "<label>-…" (ReservedLabel), and the configuration refuses
// a TSA label under which signd's own labels of other keys would fall.

// IsKeyLabel reports whether keyLabel is a time-stamping key's under the
// TSA label tsaLabel ("" = DefaultLabel): "<tsaLabel>-" and something.
func IsKeyLabel(tsaLabel, keyLabel string) bool {
	if tsaLabel == "" {
		tsaLabel = DefaultLabel
	}
	rest, ok := strings.CutPrefix(keyLabel, tsaLabel+"-")
	return ok && rest != ""
}

// ReservedLabel reports whether label, asked for another key (a
// credential's), is the TSA's: the TSA label itself or a time-stamping
// key's label under it.
func ReservedLabel(tsaLabel, label string) bool {
	if tsaLabel == "" {
		tsaLabel = DefaultLabel
	}
	return label == tsaLabel || strings.HasPrefix(label, tsaLabel+"-")
}

// KeyRecords is what KeyHolder reads of the store: the records that name
// an HSM key.
type KeyRecords interface {
	Credentials(owner, after string, limit int) ([]store.Credential, error)
	SigningKeys() ([]store.SigningKey, error)
}

// keyHolderPage is how many credentials KeyHolder reads at a time.
const keyHolderPage = 512

// KeyHolder names the record of tx that holds the key with CKA_ID id — a
// credential or an OIDC signing key — and returns "" when none does. It
// reads every credential (in pages): a rare act's cost, or Source's once
// per key.
func KeyHolder(tx KeyRecords, id []byte) (string, error) {
	for after := ""; ; {
		cs, err := tx.Credentials("", after, keyHolderPage)
		if err != nil {
			return "", err
		}
		for _, c := range cs {
			if bytes.Equal(c.KeyID, id) {
				return fmt.Sprintf("credential %s", c.ID), nil
			}
		}
		if len(cs) < keyHolderPage {
			break
		}
		after = cs[len(cs)-1].ID
	}
	ks, err := tx.SigningKeys()
	if err != nil {
		return "", err
	}
	for _, k := range ks {
		if bytes.Equal(k.KeyID, id) {
			return fmt.Sprintf("OIDC signing key %s", k.KID), nil
		}
	}
	return "", nil
}

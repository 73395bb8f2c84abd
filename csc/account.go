package csc

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/oauth/account"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// AccountTx is what the account page uses of a store transaction: the
// user's credentials, their status, the revocation of what hangs on a
// disabled credential and the audit entry of the change.
type AccountTx interface {
	store.CredentialReader
	// PutCredential records the new status (store.CredentialTx).
	PutCredential(c *store.Credential) error
	// RevokeCredential removes the SADs, codes and pending requests
	// bound to a credential being disabled (store.RevokeTx).
	RevokeCredential(credentialID string) (store.Revoked, error)
	store.AuditAppender
}

// AccountStore is the account page's view of the store (store.Scope makes
// one).
type AccountStore interface {
	View(ctx context.Context, fn func(AccountTx) error) error
	Update(ctx context.Context, fn func(AccountTx) error) error
}

var _ AccountStore = (*store.Scoped[AccountTx])(nil)

// Account lets the owner of signing credentials list them and disable or
// enable them again on the authorization server's account page
// (account.Backend). Disabling does what the admin's
// `signd credential disable` does — the SADs, codes and pending requests
// of the credential are revoked in the same transaction, with an audit
// entry — but the owner may enable again only what the owner disabled.
type Account struct {
	Store AccountStore // required
	// Revocation gives the certificate status column (see
	// Handler.Revocation); nil = from the validity dates only.
	Revocation Revocation
	Now        func() time.Time // nil = time.Now
}

var _ account.Backend = (*Account)(nil)

func (a *Account) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Credentials implements account.Backend.
func (a *Account) Credentials(ctx context.Context, username string) ([]account.Credential, error) {
	var cs []store.Credential
	err := a.Store.View(ctx, func(tx AccountTx) (err error) {
		cs, err = tx.Credentials(username, "", 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	now := a.now()
	out := make([]account.Credential, 0, len(cs))
	for i := range cs {
		c := &cs[i]
		row := account.Credential{ID: c.ID, Description: c.Description, Status: string(c.Status)}
		switch {
		case c.Status == store.CredentialEnabled:
			row.CanDisable = true
		case c.Status == store.CredentialDisabled && c.DisabledBy == store.DisabledByOwner:
			row.CanEnable = true
		case c.Status == store.CredentialDisabled:
			row.Status = "disabled-admin"
		}
		if len(c.Chain) > 0 {
			if leaf, err := x509.ParseCertificate(c.Chain[0]); err == nil {
				row.Subject = leaf.Subject.String()
				row.NotBefore, row.NotAfter = leaf.NotBefore, leaf.NotAfter
				row.Cert = a.certStatus(c.Chain, leaf, now)
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// certStatus is the certificate column: expired by the dates, else what
// the revocation checker knows ("unknown" without a current answer).
func (a *Account) certStatus(chain [][]byte, leaf *x509.Certificate, now time.Time) string {
	if now.After(leaf.NotAfter) {
		return "expired"
	}
	if a.Revocation == nil {
		return string(certstatus.Valid)
	}
	s, current := a.Revocation.Status(chain)
	if s == certstatus.Valid && !current {
		return "unknown"
	}
	return string(s)
}

// SetEnabled implements account.Backend.
func (a *Account) SetEnabled(ctx context.Context, username, id string, enabled bool) error {
	return a.Store.Update(ctx, func(tx AccountTx) error {
		c, err := tx.Credential(id)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalid):
			return account.ErrRefused
		case err != nil:
			return err
		case c.Owner != username:
			return account.ErrRefused
		}
		// The owner acts: Actor names them, IP is where from (the account
		// page's passwords.Origin).
		entry := &store.AuditEntry{Time: a.now(), User: username, Credential: c.ID, Outcome: store.AuditOK,
			Actor: "user:" + username, Target: "credential:" + c.ID, IP: passwords.OriginFrom(ctx).IP}
		switch {
		case enabled && c.Status == store.CredentialEnabled, !enabled && c.Status == store.CredentialDisabled && c.DisabledBy == store.DisabledByOwner:
			return nil // already so (a second click)
		case enabled && c.Status == store.CredentialDisabled && c.DisabledBy == store.DisabledByOwner && len(c.Chain) > 0:
			c.Status, c.DisabledBy = store.CredentialEnabled, ""
			entry.Kind, entry.Reason = store.AuditCredentialEnabled, "by the owner"
		case !enabled && c.Status == store.CredentialEnabled:
			c.Status, c.DisabledBy = store.CredentialDisabled, store.DisabledByOwner
			r, err := tx.RevokeCredential(c.ID)
			if err != nil {
				return err
			}
			entry.Kind = store.AuditCredentialDisabled
			entry.Reason = fmt.Sprintf("by the owner; revoked %d SADs, %d codes, %d pending requests", r.SADs, r.Codes, r.Requests)
		default: // pending, or disabled by an admin
			return account.ErrRefused
		}
		if err := tx.PutCredential(c); err != nil {
			return err
		}
		return tx.AppendAudit(entry)
	})
}

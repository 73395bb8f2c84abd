package hsmkeys

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// Removing a credential revokes, in the same write transaction, the SADs,
// codes and pending requests bound to it (store.RevokeTx; admin/users's
// revoke.go has the table of every removal).

// RemoveCredential performs Service.RemoveCredential: it destroys the key pair and its
// certificate object in the token, then — in one transaction — revokes
// what is bound to the credential, deletes the record and appends an
// audit entry. The token goes first: when it is unavailable nothing
// changes; when the store fails after it, the credential can no longer
// sign and running the removal again finishes it.
func (l *HSM) RemoveCredential(ctx context.Context, by principal.Principal, id string) (_ *ops.RemoveCredentialResult, err error) {
	a, err := l.Begin(ctx, by, "RemoveCredential", store.AuditCredentialRemoved, "credential:"+id)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "RemoveCredential", ops.NameRequest{Name: id}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Credential = id
	cred, err := l.getCredential(ctx, id)
	if err != nil {
		return nil, err
	}
	keys, err := l.KeyStore()
	if err != nil {
		return nil, err
	}
	res := &ops.RemoveCredentialResult{
		Removed: id, Owner: cred.Owner, KeyID: hex.EncodeToString(cred.KeyID), Label: cred.Label,
		Destroyed: []string{},
	}
	what := "key pair already absent from the HSM"
	switch err := keys.DestroyKey(ctx, cred.KeyID); {
	case errors.Is(err, hsm.ErrKeyNotFound):
	case err != nil:
		return nil, l.Fail("destroy key", err)
	default:
		res.Destroyed = append(res.Destroyed, "private key", "public key")
		what = "key pair destroyed in the HSM"
		if len(cred.Chain) > 0 {
			res.Destroyed = append(res.Destroyed, "certificate")
			what = "key pair and certificate destroyed in the HSM"
		}
	}
	a.User = cred.Owner
	a.Set("key_id", res.KeyID)
	a.Set("label", cred.Label)
	a.Result["destroyed"] = strings.Join(res.Destroyed, ", ")
	var r store.Revoked
	err = a.Update(ctx, func(tx store.Tx) error {
		c, err := tx.Credential(id)
		if err != nil {
			return err
		}
		if r, err = tx.RevokeCredential(id); err != nil {
			return err
		}
		if err := tx.DeleteCredential(id); err != nil {
			return err
		}
		a.User = c.Owner
		a.Result["revoked"] = ops.RevokedViewOf(r).String()
		a.Reason = fmt.Sprintf("by an admin: %s; revoked %s", what, ops.RevokedViewOf(r))
		return nil
	})
	if err != nil {
		ferr := l.Fail(fmt.Sprintf("credential %q", id), err)
		if len(res.Destroyed) == 0 {
			return nil, ferr
		}
		return nil, act.Errorf(ops.KindOf(ferr), "%v (the key pair is already destroyed in the HSM: run `signd credential remove %s` again to finish)", ferr, id)
	}
	res.Revoked = *ops.RevokedViewOf(r)
	return res, nil
}

package admin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// Removing or disabling what a grant hangs on revokes, in the same write
// transaction, everything issued on its strength (store.RevokeTx):
//
//	client remove          the client's access tokens, SADs, codes, pending requests
//	user disable, set-password, user remove
//	                       the user's access tokens, SADs, codes, pending requests, sessions
//	user set-pin           the user's SADs and credential-bound codes and pending requests
//	credential disable, credential remove
//	                       the SADs, codes and pending requests bound to the credential
//
// The operator sees how many of each kind went; never a value.

// maxNamed bounds the credential IDs a refusal names.
const maxNamed = 10

// RemoveUser implements Service: it revokes everything of the user and
// deletes the user and their proof documents, in one transaction. It
// refuses while the user owns credentials (remove those first: their keys
// live in the HSM).
func (l *Local) RemoveUser(ctx context.Context, by Principal, username string) (_ *RemoveResult, err error) {
	a, err := l.begin(ctx, by, "RemoveUser", store.AuditUserRemoved, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "RemoveUser", NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.user = username
	var r store.Revoked
	err = a.update(ctx, func(tx store.Tx) error {
		if _, err := tx.User(username); err != nil {
			return err
		}
		owned, err := tx.Credentials(username, "", maxNamed+1)
		if err != nil {
			return err
		}
		if len(owned) > 0 {
			ids := make([]string, 0, len(owned))
			for _, c := range owned[:min(len(owned), maxNamed)] {
				ids = append(ids, c.ID)
			}
			if len(owned) > maxNamed {
				ids = append(ids, "...")
			}
			return errorf(KindConflict, "user %q still owns credentials %s: remove them first with `signd credential remove ID`",
				username, strings.Join(ids, ", "))
		}
		if r, err = tx.RevokeUser(username); err != nil {
			return err
		}
		a.result["revoked"] = ops.RevokedViewOf(r).String()
		return tx.DeleteUser(username)
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", username), err)
	}
	return &RemoveResult{Removed: username, Revoked: *ops.RevokedViewOf(r)}, nil
}

// RemoveCredential implements Service: it destroys the key pair and its
// certificate object in the token, then — in one transaction — revokes
// what is bound to the credential, deletes the record and appends an
// audit entry. The token goes first: when it is unavailable nothing
// changes; when the store fails after it, the credential can no longer
// sign and running the removal again finishes it.
func (l *Local) RemoveCredential(ctx context.Context, by Principal, id string) (_ *RemoveCredentialResult, err error) {
	a, err := l.begin(ctx, by, "RemoveCredential", store.AuditCredentialRemoved, "credential:"+id)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "RemoveCredential", NameRequest{Name: id}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.credential = id
	cred, err := l.getCredential(ctx, id)
	if err != nil {
		return nil, err
	}
	keys, err := l.keys()
	if err != nil {
		return nil, err
	}
	res := &RemoveCredentialResult{
		Removed: id, Owner: cred.Owner, KeyID: hex.EncodeToString(cred.KeyID), Label: cred.Label,
		Destroyed: []string{},
	}
	what := "key pair already absent from the HSM"
	switch err := keys.DestroyKey(ctx, cred.KeyID); {
	case errors.Is(err, hsm.ErrKeyNotFound):
	case err != nil:
		return nil, l.fail("destroy key", err)
	default:
		res.Destroyed = append(res.Destroyed, "private key", "public key")
		what = "key pair destroyed in the HSM"
		if len(cred.Chain) > 0 {
			res.Destroyed = append(res.Destroyed, "certificate")
			what = "key pair and certificate destroyed in the HSM"
		}
	}
	a.user = cred.Owner
	a.set("key_id", res.KeyID)
	a.set("label", cred.Label)
	a.result["destroyed"] = strings.Join(res.Destroyed, ", ")
	var r store.Revoked
	err = a.update(ctx, func(tx store.Tx) error {
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
		a.user = c.Owner
		a.result["revoked"] = ops.RevokedViewOf(r).String()
		a.reason = fmt.Sprintf("by an admin: %s; revoked %s", what, ops.RevokedViewOf(r))
		return nil
	})
	if err != nil {
		ferr := l.fail(fmt.Sprintf("credential %q", id), err)
		if len(res.Destroyed) == 0 {
			return nil, ferr
		}
		return nil, errorf(KindOf(ferr), "%v (the key pair is already destroyed in the HSM: run `signd credential remove %s` again to finish)", ferr, id)
	}
	res.Revoked = *ops.RevokedViewOf(r)
	return res, nil
}

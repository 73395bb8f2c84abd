package users

import (
	"context"
	"fmt"
	"strings"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
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

// RemoveUser performs Service.RemoveUser: it revokes everything of the user and
// deletes the user and their proof documents, in one transaction. It
// refuses while the user owns credentials (remove those first: their keys
// live in the HSM).
func (l *Users) RemoveUser(ctx context.Context, by principal.Principal, username string) (_ *ops.RemoveResult, err error) {
	a, err := l.Begin(ctx, by, "RemoveUser", store.AuditUserRemoved, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "RemoveUser", ops.NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.User = username
	var r store.Revoked
	err = a.Update(ctx, func(tx store.Tx) error {
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
			return act.Errorf(ops.KindConflict, "user %q still owns credentials %s: remove them first with `signd credential remove ID`",
				username, strings.Join(ids, ", "))
		}
		if r, err = tx.RevokeUser(username); err != nil {
			return err
		}
		a.Result["revoked"] = ops.RevokedViewOf(r).String()
		return tx.DeleteUser(username)
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("user %q", username), err)
	}
	return &ops.RemoveResult{Removed: username, Revoked: *ops.RevokedViewOf(r)}, nil
}

package hsmkeys

import (
	"context"
	"encoding/hex"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/store"
)

// newKey is a key pair an act made in the token for a record it has yet to
// store (a credential, the TSA key's audit entry). What becomes of it
// when that write fails is settle's to decide, the same for every such
// key.
type newKey struct {
	l     *HSM
	keys  tokenkeys.KeyStore
	id    []byte
	label string
	// op names the act in messages ("create credential"); listed is how
	// the operator finds out whether the record was stored, for a key
	// kept when that is unknown ("no credential X is listed").
	op, listed string
}

// settle decides the fate of the key, whose record's write transaction
// failed with err (store.Settle): rolled back — unless the write may have
// committed all the same (store.ErrOutcomeUnknown: an etcd commit whose
// answer was lost) and found, run in a fence, finds the record: then the
// act is done (a.Recorded) and settle reports true. When the fence fails
// the key is kept (a stored record whose key is gone can never be
// mended, and destroying cannot be undone) and named in the error and the
// log, for the operator to remove if no record was stored.
func (k *newKey) settle(ctx context.Context, a *act.Act, err error, found func(store.Tx) error) (bool, error) {
	fate, rerr := store.Settle(ctx, k.l.Store, err, found)
	switch fate {
	case store.Committed:
		k.l.Log().Warn(k.op+": the commit reported an error but applied", "label", k.label, "err", err)
		a.Recorded = true
		return true, nil
	case store.FateUnknown:
		k.l.Log().Error(k.op+": the commit's outcome is unknown and the store cannot be read: the key is kept",
			"label", k.label, "key_id", hex.EncodeToString(k.id), "err", err, "read_err", rerr)
		return false, act.Errorf(ops.KindUnavailable, "%v; whether it was stored is unknown: its key %x with label %q is kept in the token (remove it with pkcs11-tool if %s)",
			k.l.Fail(k.op, err), k.id, k.label, k.listed)
	}
	return false, k.rollback(ctx, err)
}

// rollback destroys the key of an act that failed because of cause, and
// returns the operator's error; a key left in the token is named in it.
func (k *newKey) rollback(ctx context.Context, cause error) error {
	if derr := k.keys.DestroyKey(context.WithoutCancel(ctx), k.id); derr != nil {
		k.l.Log().Error("rollback: destroying key failed", "key_id", hex.EncodeToString(k.id), "err", derr)
		return act.Errorf(ops.KindInternal, "%v; key %x with label %q is left in the token: remove it with pkcs11-tool", k.l.Fail(k.op, cause), k.id, k.label)
	}
	return k.l.Fail(k.op, cause)
}

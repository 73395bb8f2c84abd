package hsmkeys

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// The admin operations of the OpenID Connect provider's signing keys (the
// proof documents are admin/users's, the sector check of OIDC clients
// admin/clients's).

func (l *HSM) oidcKeys() (*oidc.KeyRing, error) {
	if l.OIDCKeys == nil {
		return nil, act.Errorf(ops.KindUnavailable, "the OIDC signing keys are not available in this process")
	}
	return l.OIDCKeys, nil
}

// failKeys maps the key life-cycle errors to conflicts with a hint.
func (l *HSM) failKeys(op string, err error) error {
	switch {
	case errors.Is(err, oidc.ErrUnknownAlgorithm):
		return act.Errorf(ops.KindInvalid, "%v", err)
	case errors.As(err, new(*oidc.UnsupportedAlgorithmError)):
		return act.Errorf(ops.KindInvalid, "%v", err)
	case errors.Is(err, oidc.ErrNextKeyExists):
		return act.Errorf(ops.KindConflict, "%v: rotate to it first (`signd oidc keys rotate`)", err)
	case errors.Is(err, oidc.ErrNoNextKey):
		return act.Errorf(ops.KindConflict, "%v: publish one with `signd oidc keys create`, and rotate once relying parties have fetched the JWKS", err)
	case errors.Is(err, oidc.ErrNextKeyTooNew):
		return act.Errorf(ops.KindConflict, "%v (relying parties cache the JWKS; --force rotates now)", err)
	}
	return l.Fail(op, err)
}

func (l *HSM) oidcKeyView(r *oidc.KeyRing, k *store.SigningKey) *ops.OIDCKeyView {
	v := &ops.OIDCKeyView{
		KID: k.KID, State: string(k.State), Label: k.Label, KeyID: hex.EncodeToString(k.KeyID),
		Algorithm: k.Algorithm, CreatedAt: k.CreatedAt,
	}
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	v.ActivatedAt, v.RetiredAt, v.PublishedUntil = opt(k.ActivatedAt), opt(k.RetiredAt), opt(r.PublishedUntil(k))
	return v
}

// CreateOIDCKey performs Service.CreateOIDCKey: a new key pair of req.Alg in the HSM,
// published as the next signing key of that algorithm (active at once when
// no key of it is active yet).
//
// The key ring stores the key and the act's audit entry in one
// transaction (oidc.Recorder).
func (l *HSM) CreateOIDCKey(ctx context.Context, by principal.Principal, req ops.CreateOIDCKeyRequest) (_ *ops.OIDCKeyView, err error) {
	a, err := l.Begin(ctx, by, "CreateOIDCKey", store.AuditOIDCKeyCreated, "oidc-keys")
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "CreateOIDCKey", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if req.Alg != "" {
		a.Set("alg", req.Alg)
	}
	r, err := l.oidcKeys()
	if err != nil {
		return nil, err
	}
	k, err := r.Create(ctx, req.Alg, func(tx store.AuditAppender, c oidc.KeyChange) error {
		k := c.Created
		a.Target = "oidc-key:" + k.KID
		a.Result["alg"] = k.Algorithm
		a.Result["state"] = string(k.State)
		a.Result["label"] = k.Label
		a.Result["key_id"] = hex.EncodeToString(k.KeyID)
		return a.AppendIn(tx)
	})
	if err != nil {
		a.Target = "oidc-keys"
		return nil, l.failKeys("create OIDC signing key", err)
	}
	a.Recorded = true
	return l.oidcKeyView(r, k), nil
}

// ListOIDCKeys performs Service.ListOIDCKeys, oldest key first.
func (l *HSM) ListOIDCKeys(ctx context.Context, by principal.Principal) (_ []ops.OIDCKeyView, err error) {
	a, err := l.Read(ctx, by, "ListOIDCKeys", "oidc-keys", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	r, err := l.oidcKeys()
	if err != nil {
		return nil, err
	}
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, l.Fail("list OIDC signing keys", err)
	}
	out := make([]ops.OIDCKeyView, 0, len(ks))
	for i := range ks {
		out = append(out, *l.oidcKeyView(r, &ks[i]))
	}
	return out, nil
}

// RotateOIDCKeys performs Service.RotateOIDCKeys: the next key signs from now on, the
// active one is retired (published until its ID tokens expired), expired
// retired keys are removed from the JWKS and the HSM.
//
// As CreateOIDCKey, the act's audit entry is in the key ring's
// transaction of the rotation (and of the purge). A rotation whose purge
// of expired keys failed is done: its entry says so (purge_error) and the
// purge is tried again at the next rotation.
func (l *HSM) RotateOIDCKeys(ctx context.Context, by principal.Principal, req ops.RotateOIDCKeysRequest) (_ *ops.RotateOIDCKeysResult, err error) {
	a, err := l.Begin(ctx, by, "RotateOIDCKeys", store.AuditOIDCKeysRotated, "oidc-keys")
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "RotateOIDCKeys", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if req.Alg != "" {
		a.Set("alg", req.Alg)
	}
	a.Set("force", strconv.FormatBool(req.Force))
	r, err := l.oidcKeys()
	if err != nil {
		return nil, err
	}
	rot, err := r.Rotate(ctx, req.Alg, req.Force, func(tx store.AuditAppender, c oidc.KeyChange) error {
		a.Target = "oidc-key:" + c.Activated.KID
		a.Result = rotationFields(c)
		if c.PurgeErr != nil {
			a.Result["purge_error"] = l.Fail("purge OIDC signing keys", c.PurgeErr).Error()
		}
		return a.AppendIn(tx)
	})
	if err != nil && rot == nil {
		a.Target = "oidc-keys"
		return nil, l.failKeys("rotate OIDC signing keys", err)
	}
	a.Recorded = true
	if err != nil {
		l.Log().Warn("purging expired OIDC signing keys failed", "err", err)
		err = nil
	}
	res := &ops.RotateOIDCKeysResult{Active: *l.oidcKeyView(r, &rot.Active), Purged: rot.Purged}
	if rot.Retired != nil {
		res.Retired = l.oidcKeyView(r, rot.Retired)
	}
	return res, nil
}

// rotationFields are the audit fields of a rotation c: the algorithm, the
// key made active, the key retired and the keys purged.
func rotationFields(c oidc.KeyChange) map[string]string {
	f := map[string]string{"alg": c.Activated.Algorithm, "active": c.Activated.KID}
	if c.Retired != nil {
		f["retired"] = c.Retired.KID
	}
	if len(c.Purged) > 0 {
		f["purged"] = strings.Join(c.Purged, " ")
	}
	return f
}

// KeyRecorder records the changes of the OIDC signing keys that are no
// operation of their own, as actor, in the key ring's transaction of each:
// the daemon's at its start (the first key of an algorithm, a next key
// promoted, expired keys purged) and the first key of an algorithm a new
// client needs (CheckIDTokenAlg). occasion ("at start") is the reason of
// a key created and ends that of a promotion.
func KeyRecorder(actor, occasion string, now func() time.Time) oidc.Recorder {
	return keyRecorder(principal.Principal{Actor: actor}, occasion, now)
}

// keyRecorder is KeyRecorder for by: its entries name by's Actor, and
// the second operator who approved by's act (approved_by), as an act's
// entry does.
func keyRecorder(by principal.Principal, occasion string, now func() time.Time) oidc.Recorder {
	return func(tx store.AuditAppender, c oidc.KeyChange) error {
		for _, e := range keyChangeEntries(by, occasion, now(), c) {
			if err := tx.AppendAudit(e); err != nil {
				return err
			}
		}
		return nil
	}
}

// KeyChangeEntries are the audit entries of KeyRecorder for c: a key
// created (oidc_key_created, with its state), a next key promoted
// (oidc_keys_rotated: Target the new active key, the key it retired, the
// keys purged with it), or expired keys purged alone (oidc_keys_rotated
// with Fields["purged"]). Every text is clipped as an act's entry's
// (act.Clip): occasion may name what an operator sent.
func KeyChangeEntries(actor, occasion string, now time.Time, c oidc.KeyChange) []*store.AuditEntry {
	return keyChangeEntries(principal.Principal{Actor: actor}, occasion, now, c)
}

func keyChangeEntries(by principal.Principal, occasion string, now time.Time, c oidc.KeyChange) []*store.AuditEntry {
	e := &store.AuditEntry{Time: now, Kind: store.AuditOIDCKeysRotated, Actor: act.Clip(by.Actor), Outcome: store.AuditOK}
	switch {
	case c.Created != nil:
		k := c.Created
		e.Kind, e.Target, e.Reason = store.AuditOIDCKeyCreated, "oidc-key:"+k.KID, occasion
		e.Fields = map[string]string{"alg": k.Algorithm, "state": string(k.State), "label": k.Label}
	case c.Activated != nil:
		e.Target, e.Reason = "oidc-key:"+c.Activated.KID, strings.TrimSpace("next key promoted "+occasion)
		e.Fields = rotationFields(c)
	case len(c.Purged) > 0:
		e.Reason = "retired keys purged: their ID tokens have expired"
		e.Fields = map[string]string{"purged": strings.Join(c.Purged, " "), "count": strconv.Itoa(len(c.Purged))}
	default:
		return nil
	}
	if c.PurgeErr != nil {
		e.Fields["purge_error"] = c.PurgeErr.Error()
	}
	e.Fields = by.ApprovalFields(e.Fields)
	for k, v := range e.Fields {
		e.Fields[k] = act.Clip(v)
	}
	e.Target, e.Reason = act.Clip(e.Target), act.Clip(e.Reason)
	return []*store.AuditEntry{e}
}

// CheckIDTokenAlgName checks what CheckIDTokenAlg checks of a client
// without the key ring: its id_token_signed_response_alg, if any, is one
// of RS256, PS256 and ES256, spelt exactly, and the client has scope
// openid. A caller runs it before validating the rest of the client, so
// that the operator reads this message rather than the store's.
func CheckIDTokenAlgName(c *store.Client) error {
	alg := c.IDTokenSignedResponseAlg
	if alg == "" {
		return nil
	}
	if !store.ValidJWSAlgorithm(alg) {
		return act.Errorf(ops.KindInvalid, "client %q: ID-token algorithm %.20q is not one signd signs with (%s; case-sensitive)", c.ID, alg, strings.Join(store.JWSAlgorithms(), ", "))
	}
	if !slices.Contains(c.Scopes, oidc.ScopeOpenID) {
		return act.Errorf(ops.KindInvalid, "client %q: an ID-token algorithm needs scope openid", c.ID)
	}
	return nil
}

// CheckIDTokenAlg checks a client's id_token_signed_response_alg and makes
// sure the provider can sign with it: the algorithm must be one of
// RS256, PS256 and ES256, spelt exactly (never none or an HMAC
// algorithm), the client must have scope openid, and a key of it must be
// active — the first key of an algorithm is generated now, active at once
// (no relying party can hold an ID token of it yet), and audited as by's
// in the key ring's transaction (KeyRecorder), which within runs: the
// caller's transaction that stores the client, so that a client refused
// there (its ID taken meanwhile) leaves no key behind
// (oidc.KeyRing.EnsureAlgWithin). A token that cannot make the key
// refuses the client with the mechanism it lacks. The caller validates
// the client first (and checks that its ID is free), so that a client
// refused anyway costs no key generation.
func (l *HSM) CheckIDTokenAlg(ctx context.Context, by principal.Principal, c *store.Client, within oidc.Within) error {
	alg := c.IDTokenSignedResponseAlg
	if alg == "" {
		return nil
	}
	if err := CheckIDTokenAlgName(c); err != nil {
		return err
	}
	r, err := l.oidcKeys()
	if err != nil {
		return err
	}
	rec := keyRecorder(by, fmt.Sprintf("for client %q", c.ID), l.Clock)
	if _, err := r.EnsureAlgWithin(ctx, alg, rec, within); err != nil {
		if u := (*oidc.UnsupportedAlgorithmError)(nil); errors.As(err, &u) {
			return act.Errorf(ops.KindInvalid, "client %q: id_token_signed_response_alg %v", c.ID, u)
		}
		if errors.Is(err, store.ErrAlreadyExists) {
			return l.Fail(fmt.Sprintf("client %q", c.ID), err) // within's
		}
		return l.Fail(fmt.Sprintf("%s signing key for client %q", alg, c.ID), err)
	}
	return nil
}

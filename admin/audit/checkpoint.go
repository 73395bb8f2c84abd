package audit

import (
	"context"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// checkpoints returns the token as tokenkeys.AuditKeys, and the Maker.
func (l *Audit) checkpoints() (tokenkeys.AuditKeys, *checkpoint.Maker, error) {
	if l.Checkpoints == nil {
		return nil, nil, act.Errorf(ops.KindUnavailable, "audit checkpoints are not configured here (audit.checkpoint_dir)")
	}
	keys, err := l.HSM.KeyStore()
	if err != nil {
		return nil, nil, err
	}
	ak, ok := keys.(tokenkeys.AuditKeys)
	if !ok {
		return nil, nil, act.Errorf(ops.KindUnavailable, "the HSM of this process cannot hold the audit key")
	}
	return ak, l.Checkpoints, nil
}

// CreateAuditKey performs Service.CreateAuditKey: it generates the audit
// key in the token, labelled audit.key_label, and records
// audit_key_created naming the actor. A second key with the label is refused (KindExists):
// checkpoints must stay verifiable with the key witnesses hold.
//
// The key is made in the token: its audit entry follows it (act.Act.End).
func (l *Audit) CreateAuditKey(ctx context.Context, by principal.Principal, req ops.CreateAuditKeyRequest) (_ *ops.AuditKeyView, err error) {
	a, err := l.Begin(ctx, by, "CreateAuditKey", store.AuditAuditKeyCreated, "audit-keys")
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "CreateAuditKey", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Outside = true
	if req.Algorithm != "" {
		a.Set("algorithm", req.Algorithm)
	}
	switch req.Algorithm {
	case "", tokenkeys.AuditKeyEd25519, tokenkeys.AuditKeyECDSAP256:
	default:
		return nil, act.Errorf(ops.KindInvalid, "audit key algorithm %q: %s or %s", req.Algorithm, tokenkeys.AuditKeyEd25519, tokenkeys.AuditKeyECDSAP256)
	}
	keys, mk, err := l.checkpoints()
	if err != nil {
		return nil, err
	}
	label := l.AuditKeyLabel
	if _, err := keys.KeyByLabel(ctx, label); err == nil {
		return nil, act.Errorf(ops.KindExists, "the token already holds an audit key labelled %q (`signd audit key show`)", label)
	} else if !errors.Is(err, hsm.ErrKeyNotFound) {
		return nil, l.Fail("audit key create", err)
	}
	alg := req.Algorithm
	if alg == "" {
		can, err := keys.CanEd25519(ctx)
		if err != nil {
			return nil, l.Fail("audit key create", err)
		}
		alg = tokenkeys.AuditKeyECDSAP256
		if can {
			alg = tokenkeys.AuditKeyEd25519
		}
	}
	var info *hsm.KeyInfo
	if alg == tokenkeys.AuditKeyEd25519 {
		info, err = keys.GenerateEd25519(ctx, label)
	} else {
		info, err = keys.GenerateEC(ctx, label, elliptic.P256())
	}
	if err != nil {
		return nil, l.Fail("audit key create", err)
	}
	a.Target = "audit-key:" + hex.EncodeToString(info.ID)
	a.Result["label"] = label
	v, err := l.auditKeyView(ctx, keys, mk, label)
	if err != nil {
		return nil, err
	}
	a.Result["algorithm"], a.Result["verifier_key"] = v.Algorithm, v.VerifierKey
	if err := checkpoint.WriteKey(mk.Dir, v.VerifierKey); err != nil {
		// The key is made and audited; the public copy follows with the
		// first checkpoint.
		l.Log().Warn("audit key: verifier key not written to the checkpoint directory", "err", err)
	}
	return v, nil
}

// ShowAuditKey performs Service.ShowAuditKey.
func (l *Audit) ShowAuditKey(ctx context.Context, by principal.Principal) (_ *ops.AuditKeyView, err error) {
	a, err := l.Read(ctx, by, "ShowAuditKey", "audit-keys", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	keys, mk, err := l.checkpoints()
	if err != nil {
		return nil, err
	}
	return l.auditKeyView(ctx, keys, mk, l.AuditKeyLabel)
}

func (l *Audit) auditKeyView(ctx context.Context, keys tokenkeys.AuditKeys, mk *checkpoint.Maker, label string) (*ops.AuditKeyView, error) {
	info, err := keys.KeyByLabel(ctx, label)
	if errors.Is(err, hsm.ErrKeyNotFound) {
		return nil, act.Errorf(ops.KindNotFound, "no audit key labelled %q in the token: `signd audit key create` makes it", label)
	}
	if err != nil {
		return nil, l.Fail("audit key", err)
	}
	k, err := mk.Key(ctx, mk.Origin)
	if err != nil {
		return nil, l.Fail("audit key", err)
	}
	return &ops.AuditKeyView{Label: label, ID: hex.EncodeToString(info.ID), Algorithm: k.Algorithm, Origin: mk.Origin, VerifierKey: k.VerifierKey}, nil
}

// AuditCheckpoint performs Service.AuditCheckpoint: it signs a checkpoint
// of the whole audit log now (checkpoint.Maker.Make), as the daemon does
// every audit.checkpoint_interval.
//
// Make appends the audit_checkpoint entry itself, also when it refuses a
// log that no longer extends the latest checkpoint; the act appends one
// only when Make was not reached.
func (l *Audit) AuditCheckpoint(ctx context.Context, by principal.Principal) (_ *ops.CheckpointView, err error) {
	a, err := l.Begin(ctx, by, "AuditCheckpoint", store.AuditCheckpoint, "audit")
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "AuditCheckpoint", struct{}{}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	_, mk, err := l.checkpoints()
	if err != nil {
		return nil, err
	}
	m, err := mk.Make(ctx, by.Actor, false)
	a.Recorded = err == nil || errors.Is(err, checkpoint.ErrTruncated) || errors.Is(err, checkpoint.ErrRewritten)
	switch {
	case errors.Is(err, checkpoint.ErrNoKey):
		return nil, act.Errorf(ops.KindNotFound, "audit checkpoint: %v", err)
	case errors.Is(err, checkpoint.ErrTruncated), errors.Is(err, checkpoint.ErrRewritten), errors.Is(err, checkpoint.ErrConflict),
		errors.Is(err, checkpoint.ErrSignature), errors.Is(err, checkpoint.ErrEmpty):
		return nil, act.Errorf(ops.KindConflict, "audit checkpoint refused: %v", err)
	case err != nil:
		return nil, l.Fail("audit checkpoint", err)
	}
	c := m.Checkpoint
	return &ops.CheckpointView{Origin: c.Origin, Size: c.Size, Hash: base64.StdEncoding.EncodeToString(c.Hash), Time: c.Time,
		File: m.Path, Note: string(m.Note), Unchanged: m.Unchanged}, nil
}

// AuditVerifyCheckpoint performs Service.AuditVerifyCheckpoint: it checks
// the checkpoint's signature (with req.Key, else the audit key in the
// token, under the checkpoint's own origin) and its origin
// (audit.checkpoint_origin), then walks the whole chain
// (checkpoint.Verify). A checkpoint that does
// not verify is KindInvalid; a log that does not extend it is a report
// with OK false.
//
// As AuditVerify, its admin_read entry is appended after verifying,
// naming the checkpoint, and nothing is written into a log whose chain is
// broken or that does not extend the checkpoint.
func (l *Audit) AuditVerifyCheckpoint(ctx context.Context, by principal.Principal, req ops.AuditVerifyCheckpointRequest) (res *ops.CheckpointReport, err error) {
	a, err := l.Read(ctx, by, "AuditVerifyCheckpoint", "audit", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	defer recoverRead("audit verify", &err)
	if req.Checkpoint == "" {
		return nil, act.Errorf(ops.KindInvalid, "no checkpoint given")
	}
	msg := []byte(req.Checkpoint)
	origin := ""
	var vkey string
	var v interface {
		Name() string
		KeyHash() uint32
		Verify(msg, sig []byte) bool
	}
	if l.Checkpoints != nil {
		origin = l.Checkpoints.Origin
	}
	if req.Key != "" {
		nv, err := checkpoint.NewVerifier(req.Key)
		if err != nil {
			return nil, act.Errorf(ops.KindInvalid, "--key: %v", err)
		}
		v, vkey = nv, req.Key
	} else {
		_, mk, err := l.checkpoints()
		if err != nil {
			return nil, err
		}
		k, err := mk.Key(ctx, checkpoint.Origin(msg))
		if errors.Is(err, checkpoint.ErrNoKey) {
			return nil, act.Errorf(ops.KindNotFound, "%v; or give the verifier key (--key)", err)
		}
		if errors.Is(err, checkpoint.ErrMalformed) || errors.Is(err, checkpoint.ErrKey) {
			return nil, act.Errorf(ops.KindInvalid, "checkpoint: %v", err)
		}
		if err != nil {
			return nil, l.Fail("audit verify", err)
		}
		v, vkey = k.Verifier, k.VerifierKey
	}
	c, err := checkpoint.Open(msg, v, origin)
	if err != nil {
		return nil, act.Errorf(ops.KindInvalid, "%v", err)
	}
	res = &ops.CheckpointReport{Origin: c.Origin, Size: c.Size, Hash: base64.StdEncoding.EncodeToString(c.Hash), Key: vkey}
	err = l.Store.View(ctx, func(tx store.Tx) error {
		r, err := checkpoint.Verify(tx, c)
		if err != nil {
			return err
		}
		res.Entries, res.Head, res.Extends = r.Entries, hex.EncodeToString(r.Head), r.Extends
		res.BrokenAt, res.BrokenChain, res.Reason = r.BrokenAt, r.BrokenChain, r.Reason
		if r.Problem != nil {
			res.Problem = r.Problem.Error()
		}
		res.OK = r.Extends && r.Reason == ""
		return nil
	})
	if err != nil {
		return nil, l.Fail("audit verify", err)
	}
	switch {
	case res.Reason != "":
		a.Unaudited = fmt.Sprintf("the audit log is broken at %s (%s): nothing is written into it", ops.Broken(res.BrokenChain, res.BrokenAt), res.Reason)
		return res, nil
	case !res.Extends:
		a.Unaudited = fmt.Sprintf("the audit log does not extend the checkpoint of %d entries (%s): nothing is written into it", res.Size, res.Problem)
		return res, nil
	}
	a.Result["size"] = strconv.FormatUint(res.Size, 10)
	a.Result["extends"] = strconv.FormatBool(res.Extends)
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

package admin

import (
	"context"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// checkpoints returns the token as AuditKeys, and the Maker.
func (l *Local) checkpoints() (AuditKeys, *checkpoint.Maker, error) {
	if l.Checkpoints == nil {
		return nil, nil, errorf(KindUnavailable, "audit checkpoints are not configured here (audit.checkpoint_dir)")
	}
	keys, err := l.keys()
	if err != nil {
		return nil, nil, err
	}
	ak, ok := keys.(AuditKeys)
	if !ok {
		return nil, nil, errorf(KindUnavailable, "the HSM of this process cannot hold the audit key")
	}
	return ak, l.Checkpoints, nil
}

// CreateAuditKey implements Service: it generates the audit key in the
// token, labelled audit.key_label, and records audit_key_created naming
// the actor. A second key with the label is refused (KindExists):
// checkpoints must stay verifiable with the key witnesses hold.
//
// The key is made in the token: its audit entry follows it (act.end).
func (l *Local) CreateAuditKey(ctx context.Context, by Principal, req CreateAuditKeyRequest) (_ *AuditKeyView, err error) {
	a, err := l.begin(ctx, by, "CreateAuditKey", store.AuditAuditKeyCreated, "audit-keys")
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "CreateAuditKey", req); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.outside = true
	if req.Algorithm != "" {
		a.set("algorithm", req.Algorithm)
	}
	switch req.Algorithm {
	case "", AuditKeyEd25519, AuditKeyECDSAP256:
	default:
		return nil, errorf(KindInvalid, "audit key algorithm %q: %s or %s", req.Algorithm, AuditKeyEd25519, AuditKeyECDSAP256)
	}
	keys, mk, err := l.checkpoints()
	if err != nil {
		return nil, err
	}
	label := l.AuditKeyLabel
	if _, err := keys.KeyByLabel(ctx, label); err == nil {
		return nil, errorf(KindExists, "the token already holds an audit key labelled %q (`signd audit key show`)", label)
	} else if !errors.Is(err, hsm.ErrKeyNotFound) {
		return nil, l.fail("audit key create", err)
	}
	alg := req.Algorithm
	if alg == "" {
		can, err := keys.CanEd25519(ctx)
		if err != nil {
			return nil, l.fail("audit key create", err)
		}
		alg = AuditKeyECDSAP256
		if can {
			alg = AuditKeyEd25519
		}
	}
	var info *hsm.KeyInfo
	if alg == AuditKeyEd25519 {
		info, err = keys.GenerateEd25519(ctx, label)
	} else {
		info, err = keys.GenerateEC(ctx, label, elliptic.P256())
	}
	if err != nil {
		return nil, l.fail("audit key create", err)
	}
	a.target = "audit-key:" + hex.EncodeToString(info.ID)
	a.result["label"] = label
	v, err := l.auditKeyView(ctx, keys, mk, label)
	if err != nil {
		return nil, err
	}
	a.result["algorithm"], a.result["verifier_key"] = v.Algorithm, v.VerifierKey
	if err := checkpoint.WriteKey(mk.Dir, v.VerifierKey); err != nil {
		// The key is made and audited; the public copy follows with the
		// first checkpoint.
		l.logger().Warn("audit key: verifier key not written to the checkpoint directory", "err", err)
	}
	return v, nil
}

// ShowAuditKey implements Service.
func (l *Local) ShowAuditKey(ctx context.Context, by Principal) (_ *AuditKeyView, err error) {
	a, err := l.read(ctx, by, "ShowAuditKey", "audit-keys", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	keys, mk, err := l.checkpoints()
	if err != nil {
		return nil, err
	}
	return l.auditKeyView(ctx, keys, mk, l.AuditKeyLabel)
}

func (l *Local) auditKeyView(ctx context.Context, keys AuditKeys, mk *checkpoint.Maker, label string) (*AuditKeyView, error) {
	info, err := keys.KeyByLabel(ctx, label)
	if errors.Is(err, hsm.ErrKeyNotFound) {
		return nil, errorf(KindNotFound, "no audit key labelled %q in the token: `signd audit key create` makes it", label)
	}
	if err != nil {
		return nil, l.fail("audit key", err)
	}
	k, err := mk.Key(ctx, mk.Origin)
	if err != nil {
		return nil, l.fail("audit key", err)
	}
	return &AuditKeyView{Label: label, ID: hex.EncodeToString(info.ID), Algorithm: k.Algorithm, Origin: mk.Origin, VerifierKey: k.VerifierKey}, nil
}

// AuditCheckpoint implements Service: it signs a checkpoint of the whole
// audit log now (checkpoint.Maker.Make), as the daemon does every
// audit.checkpoint_interval.
//
// Make appends the audit_checkpoint entry itself, also when it refuses a
// log that no longer extends the latest checkpoint; the act appends one
// only when Make was not reached.
func (l *Local) AuditCheckpoint(ctx context.Context, by Principal) (_ *CheckpointView, err error) {
	a, err := l.begin(ctx, by, "AuditCheckpoint", store.AuditCheckpoint, "audit")
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "AuditCheckpoint", struct{}{}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	_, mk, err := l.checkpoints()
	if err != nil {
		return nil, err
	}
	m, err := mk.Make(ctx, by.Actor, false)
	a.recorded = err == nil || errors.Is(err, checkpoint.ErrTruncated) || errors.Is(err, checkpoint.ErrRewritten)
	switch {
	case errors.Is(err, checkpoint.ErrNoKey):
		return nil, errorf(KindNotFound, "audit checkpoint: %v", err)
	case errors.Is(err, checkpoint.ErrTruncated), errors.Is(err, checkpoint.ErrRewritten), errors.Is(err, checkpoint.ErrConflict),
		errors.Is(err, checkpoint.ErrSignature), errors.Is(err, checkpoint.ErrEmpty):
		return nil, errorf(KindConflict, "audit checkpoint refused: %v", err)
	case err != nil:
		return nil, l.fail("audit checkpoint", err)
	}
	c := m.Checkpoint
	return &CheckpointView{Origin: c.Origin, Size: c.Size, Hash: base64.StdEncoding.EncodeToString(c.Hash), Time: c.Time,
		File: m.Path, Note: string(m.Note), Unchanged: m.Unchanged}, nil
}

// AuditVerifyCheckpoint implements Service: it checks the checkpoint's
// signature (with req.Key, else the audit key in the token, under the
// checkpoint's own origin) and its origin (audit.checkpoint_origin),
// then walks the whole chain (checkpoint.Verify). A checkpoint that does
// not verify is KindInvalid; a log that does not extend it is a report
// with OK false.
//
// As AuditVerify, its admin_read entry is appended after verifying,
// naming the checkpoint, and nothing is written into a log whose chain is
// broken or that does not extend the checkpoint.
func (l *Local) AuditVerifyCheckpoint(ctx context.Context, by Principal, req AuditVerifyCheckpointRequest) (res *CheckpointReport, err error) {
	a, err := l.read(ctx, by, "AuditVerifyCheckpoint", "audit", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	defer recoverRead("audit verify", &err)
	if req.Checkpoint == "" {
		return nil, errorf(KindInvalid, "no checkpoint given")
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
			return nil, errorf(KindInvalid, "--key: %v", err)
		}
		v, vkey = nv, req.Key
	} else {
		_, mk, err := l.checkpoints()
		if err != nil {
			return nil, err
		}
		k, err := mk.Key(ctx, checkpoint.Origin(msg))
		if errors.Is(err, checkpoint.ErrNoKey) {
			return nil, errorf(KindNotFound, "%v; or give the verifier key (--key)", err)
		}
		if errors.Is(err, checkpoint.ErrMalformed) || errors.Is(err, checkpoint.ErrKey) {
			return nil, errorf(KindInvalid, "checkpoint: %v", err)
		}
		if err != nil {
			return nil, l.fail("audit verify", err)
		}
		v, vkey = k.Verifier, k.VerifierKey
	}
	c, err := checkpoint.Open(msg, v, origin)
	if err != nil {
		return nil, errorf(KindInvalid, "%v", err)
	}
	res = &CheckpointReport{Origin: c.Origin, Size: c.Size, Hash: base64.StdEncoding.EncodeToString(c.Hash), Key: vkey}
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
		return nil, l.fail("audit verify", err)
	}
	switch {
	case res.Reason != "":
		a.unaudited = fmt.Sprintf("the audit log is broken at %s (%s): nothing is written into it", Broken(res.BrokenChain, res.BrokenAt), res.Reason)
		return res, nil
	case !res.Extends:
		a.unaudited = fmt.Sprintf("the audit log does not extend the checkpoint of %d entries (%s): nothing is written into it", res.Size, res.Problem)
		return res, nil
	}
	a.result["size"] = strconv.FormatUint(res.Size, 10)
	a.result["extends"] = strconv.FormatBool(res.Extends)
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

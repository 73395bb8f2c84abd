package hsmkeys

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/csc/enroll"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

// defaultTSAAlgo is the TSA key size: tokens outlive signatures' keys, so
// one step above the credential default.
const defaultTSAAlgo = "rsa-3072"

// EnrollTSA performs Service.EnrollTSA.
//
// The key is generated first; its audit entry is appended next and, when
// the store cannot take it, the key is destroyed again: both or neither.
func (l *HSM) EnrollTSA(ctx context.Context, by principal.Principal, req ops.EnrollTSARequest) (_ *ops.EnrollTSAResult, err error) {
	a, err := l.Begin(ctx, by, "EnrollTSA", store.AuditTSAEnrolled, "tsa-keys")
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "EnrollTSA", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	algo := req.Algo
	if algo == "" {
		algo = defaultTSAAlgo
	}
	subject := req.Subject
	if subject == "" {
		subject = "CN=signd TSA"
	}
	a.Set("algorithm", algo)
	a.Set("subject", subject)
	spec, err := enroll.Request{Algorithm: algo, Subject: subject}.Check()
	if err != nil {
		return nil, act.Errorf(ops.KindInvalid, "%v", err)
	}
	keys, err := l.KeyStore()
	if err != nil {
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, l.Fail("tsa", err)
	}
	label := l.tsaLabel() + "-" + id
	key, csrDER, err := enroll.Generate(ctx, &tokenkeys.Enroll{Keys: keys}, label, spec)
	if key == nil {
		return nil, l.Fail("generate key", err)
	}
	if err != nil {
		if derr := keys.DestroyKey(context.WithoutCancel(ctx), key.ID); derr != nil {
			l.Log().Error("rollback: destroying key failed", "key_id", hex.EncodeToString(key.ID), "err", derr)
		}
		return nil, l.Fail("tsa certificate request", err)
	}
	a.Target = "tsa-key:" + hex.EncodeToString(key.ID)
	a.Set("label", label)
	if err := a.Record(ctx); err != nil {
		if derr := keys.DestroyKey(context.WithoutCancel(ctx), key.ID); derr != nil {
			l.Log().Error("rollback: destroying key failed", "key_id", hex.EncodeToString(key.ID), "err", derr)
			return nil, act.Errorf(ops.KindOf(err), "%v; key %x with label %q is left in the token unaudited: remove it with pkcs11-tool", err, key.ID, label)
		}
		return nil, err
	}
	return &ops.EnrollTSAResult{KeyID: hex.EncodeToString(key.ID), Label: label, CSRPEM: enroll.CSRPEM(csrDER)}, nil
}

// ImportTSACertificate performs Service.ImportTSACertificate. The certificate must be fit
// for time-stamping (tsa.CheckCertificate: only a critical
// id-kp-timeStamping, valid now, the key's public key) and chain to its
// issuers when they are given.
//
// The certificate goes into the token first; the audit entry follows
// (act.Act.End).
func (l *HSM) ImportTSACertificate(ctx context.Context, by principal.Principal, req ops.ImportTSACertificateRequest) (_ *ops.TSACertificateView, err error) {
	a, err := l.Begin(ctx, by, "ImportTSACertificate", store.AuditTSAImported, "tsa-key:"+req.KeyID)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "ImportTSACertificate", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Outside = true
	id, err := hex.DecodeString(req.KeyID)
	if err != nil || len(id) == 0 || len(id) > 64 {
		return nil, act.Errorf(ops.KindInvalid, "key id must be the hex CKA_ID printed by signd tsa enroll")
	}
	chain, err := enroll.ParseChainPEM([]byte(req.CertPEM))
	if err != nil {
		return nil, act.Errorf(ops.KindInvalid, "certificate: %v", err)
	}
	keys, err := l.KeyStore()
	if err != nil {
		return nil, err
	}
	key, err := keys.Key(ctx, id)
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("tsa key %s", req.KeyID), err)
	}
	if err := tsa.CheckCertificate(chain[0], key.Public(), l.Clock()); err != nil {
		return nil, act.Errorf(ops.KindInvalid, "not a TSA certificate for key %s: %v", req.KeyID, err)
	}
	if len(chain) > 1 {
		if err := enroll.VerifyChain(chain, l.Clock()); err != nil {
			return nil, act.Errorf(ops.KindInvalid, "%v", err)
		}
	}
	if err := keys.ImportCertificate(ctx, id, l.tsaLabel(), chain[0]); err != nil {
		return nil, l.Fail("import certificate", err)
	}
	a.Set("subject", chain[0].Subject.String())
	a.Set("serial", chain[0].SerialNumber.Text(16))
	a.Set("not_after", chain[0].NotAfter.UTC().Format(time.RFC3339))
	return &ops.TSACertificateView{
		KeyID: req.KeyID, Subject: chain[0].Subject.String(), Serial: chain[0].SerialNumber.Text(16),
		NotAfter: chain[0].NotAfter.UTC().Format("2006-01-02T15:04:05Z"),
	}, nil
}

func (l *HSM) tsaLabel() string {
	if l.TSALabel != "" {
		return l.TSALabel
	}
	return tsa.DefaultLabel
}

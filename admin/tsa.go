package admin

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/csc/enroll"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

// defaultTSAAlgo is the TSA key size: tokens outlive signatures' keys, so
// one step above the credential default.
const defaultTSAAlgo = "rsa-3072"

// EnrollTSA implements Service.
//
// The key is generated first; its audit entry is appended next and, when
// the store cannot take it, the key is destroyed again: both or neither.
func (l *Local) EnrollTSA(ctx context.Context, by Principal, req EnrollTSARequest) (_ *EnrollTSAResult, err error) {
	a, err := l.begin(ctx, by, "EnrollTSA", store.AuditTSAEnrolled, "tsa-keys")
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "EnrollTSA", req); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	algo := req.Algo
	if algo == "" {
		algo = defaultTSAAlgo
	}
	subject := req.Subject
	if subject == "" {
		subject = "CN=signd TSA"
	}
	a.set("algorithm", algo)
	a.set("subject", subject)
	spec, err := enroll.Request{Algorithm: algo, Subject: subject}.Check()
	if err != nil {
		return nil, errorf(KindInvalid, "%v", err)
	}
	keys, err := l.keys()
	if err != nil {
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, l.fail("tsa", err)
	}
	label := l.tsaLabel() + "-" + id
	key, csrDER, err := enroll.Generate(ctx, &tokenkeys.Enroll{Keys: keys}, label, spec)
	if key == nil {
		return nil, l.fail("generate key", err)
	}
	if err != nil {
		if derr := keys.DestroyKey(context.WithoutCancel(ctx), key.ID); derr != nil {
			l.logger().Error("rollback: destroying key failed", "key_id", hex.EncodeToString(key.ID), "err", derr)
		}
		return nil, l.fail("tsa certificate request", err)
	}
	a.target = "tsa-key:" + hex.EncodeToString(key.ID)
	a.set("label", label)
	if err := a.record(ctx); err != nil {
		if derr := keys.DestroyKey(context.WithoutCancel(ctx), key.ID); derr != nil {
			l.logger().Error("rollback: destroying key failed", "key_id", hex.EncodeToString(key.ID), "err", derr)
			return nil, errorf(KindOf(err), "%v; key %x with label %q is left in the token unaudited: remove it with pkcs11-tool", err, key.ID, label)
		}
		return nil, err
	}
	return &EnrollTSAResult{KeyID: hex.EncodeToString(key.ID), Label: label, CSRPEM: enroll.CSRPEM(csrDER)}, nil
}

// ImportTSACertificate implements Service. The certificate must be fit
// for time-stamping (tsa.CheckCertificate: only a critical
// id-kp-timeStamping, valid now, the key's public key) and chain to its
// issuers when they are given.
//
// The certificate goes into the token first; the audit entry follows
// (act.end).
func (l *Local) ImportTSACertificate(ctx context.Context, by Principal, req ImportTSACertificateRequest) (_ *TSACertificateView, err error) {
	a, err := l.begin(ctx, by, "ImportTSACertificate", store.AuditTSAImported, "tsa-key:"+req.KeyID)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "ImportTSACertificate", req); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.outside = true
	id, err := hex.DecodeString(req.KeyID)
	if err != nil || len(id) == 0 || len(id) > 64 {
		return nil, errorf(KindInvalid, "key id must be the hex CKA_ID printed by signd tsa enroll")
	}
	chain, err := enroll.ParseChainPEM([]byte(req.CertPEM))
	if err != nil {
		return nil, errorf(KindInvalid, "certificate: %v", err)
	}
	keys, err := l.keys()
	if err != nil {
		return nil, err
	}
	key, err := keys.Key(ctx, id)
	if err != nil {
		return nil, l.fail(fmt.Sprintf("tsa key %s", req.KeyID), err)
	}
	if err := tsa.CheckCertificate(chain[0], key.Public(), l.now()); err != nil {
		return nil, errorf(KindInvalid, "not a TSA certificate for key %s: %v", req.KeyID, err)
	}
	if len(chain) > 1 {
		if err := enroll.VerifyChain(chain, l.now()); err != nil {
			return nil, errorf(KindInvalid, "%v", err)
		}
	}
	if err := keys.ImportCertificate(ctx, id, l.tsaLabel(), chain[0]); err != nil {
		return nil, l.fail("import certificate", err)
	}
	a.set("subject", chain[0].Subject.String())
	a.set("serial", chain[0].SerialNumber.Text(16))
	a.set("not_after", chain[0].NotAfter.UTC().Format(time.RFC3339))
	return &TSACertificateView{
		KeyID: req.KeyID, Subject: chain[0].Subject.String(), Serial: chain[0].SerialNumber.Text(16),
		NotAfter: chain[0].NotAfter.UTC().Format("2006-01-02T15:04:05Z"),
	}, nil
}

func (l *Local) tsaLabel() string {
	if l.TSALabel != "" {
		return l.TSALabel
	}
	return tsa.DefaultLabel
}

package hsmkeys

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
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
// The key is generated first; its audit entry, the only record of it in
// the store, is appended next and, when that write fails, the key is
// destroyed again: both or neither. A write whose outcome is unknown
// (store.ErrOutcomeUnknown) is settled as a credential's (newKey.settle):
// the key stays if a fenced read finds its entry, and is kept and named
// when the store cannot be read.
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
	// Where the audit chains end now: the entry of this act, if its
	// write committed unanswered, is after that (tsaEntry).
	var ends map[string]uint64
	if err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		ends, err = auditEnds(tx)
		return err
	}); err != nil {
		return nil, l.Fail("tsa", err)
	}
	label := l.tsaLabel() + "-" + id
	key, csrDER, err := enroll.Generate(ctx, &tokenkeys.Enroll{Keys: keys}, label, spec)
	if key == nil {
		return nil, l.Fail("generate key", err)
	}
	k := &newKey{l: l, keys: keys, id: key.ID, label: label, op: "enroll TSA key",
		listed: fmt.Sprintf("`signd audit export --kind tsa_enrolled` shows no entry for tsa-key:%x", key.ID)}
	if err != nil {
		return nil, k.rollback(ctx, err)
	}
	a.Target = "tsa-key:" + hex.EncodeToString(key.ID)
	a.Set("label", label)
	if err := a.Update(ctx, func(store.Tx) error { return nil }); err != nil {
		if ok, err := k.settle(ctx, a, err, tsaEntry(a.Target, ends)); !ok {
			return nil, err
		}
	}
	return &ops.EnrollTSAResult{KeyID: hex.EncodeToString(key.ID), Label: label, CSRPEM: enroll.CSRPEM(csrDER)}, nil
}

// ImportTSACertificate performs Service.ImportTSACertificate. The key must
// be a time-stamping key EnrollTSA made (checkTSAKey: never a credential's
// or another key of the token), the certificate fit for time-stamping
// (tsa.CheckCertificate: only a critical id-kp-timeStamping, valid now,
// the key's public key) and chain to its issuers when they are given.
//
// The certificate goes into the token first, its issuers next (under
// tsa.IssuerLabel: the certificate status check reads the chain); the
// audit entry follows (act.Act.End).
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
	if err := l.checkTSAKey(ctx, req.KeyID, id, key.Label()); err != nil {
		return nil, err
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
	// The issuers, which the certificate status check needs (tsa.HSMSource
	// reads them); importing the certificate destroyed any older ones.
	if len(chain) > 1 {
		if err := keys.StoreCertificates(ctx, id, tsa.IssuerLabel(l.tsaLabel()), chain[1:]); err != nil {
			return nil, l.Fail("store the issuers' certificates (import the chain again)", err)
		}
	}
	a.Set("chain_length", strconv.Itoa(len(chain)))
	a.Set("subject", chain[0].Subject.String())
	a.Set("serial", chain[0].SerialNumber.Text(16))
	a.Set("not_after", chain[0].NotAfter.UTC().Format(time.RFC3339))
	return &ops.TSACertificateView{
		KeyID: req.KeyID, Subject: chain[0].Subject.String(), Serial: chain[0].SerialNumber.Text(16),
		NotAfter: chain[0].NotAfter.UTC().Format("2006-01-02T15:04:05Z"),
	}, nil
}

// checkTSAKey refuses a key that is not a time-stamping key (package tsa,
// keys.go): one a record of the store holds (KindConflict: a credential's
// or an OIDC signing key — its certificate would have the TSA sign with
// it, without its owner's authorization, and replace the certificate
// object it has in the token), or one not labelled as EnrollTSA labels
// its keys (KindInvalid: the audit key, a key made by hand).
func (l *HSM) checkTSAKey(ctx context.Context, hexID string, id []byte, label string) error {
	var holder string
	if err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		holder, err = tsa.KeyHolder(tx, id)
		return err
	}); err != nil {
		return l.Fail("tsa", err)
	}
	if holder != "" {
		return act.Errorf(ops.KindConflict, "key %s is the key of %s: a TSA certificate needs a key of its own (signd tsa enroll)", hexID, holder)
	}
	if !tsa.IsKeyLabel(l.tsaLabel(), label) {
		return act.Errorf(ops.KindInvalid, "key %s, labelled %q, is not a time-stamping key: signd tsa enroll makes one (labelled %s-<id>)", hexID, label, l.tsaLabel())
	}
	return nil
}

// auditEnds returns the sequence number of the last entry of each chain
// of the audit log.
func auditEnds(tx store.Tx) (map[string]uint64, error) {
	chains, err := tx.AuditChains()
	if err != nil {
		return nil, err
	}
	ends := make(map[string]uint64, len(chains))
	for _, c := range chains {
		if ends[c.Name], err = tx.AuditChainSize(c.Name); err != nil {
			return nil, err
		}
	}
	return ends, nil
}

// errFound stops tsaEntry's walk.
var errFound = errors.New("found")

// tsaEntry finds the tsa_enrolled entry of target appended after ends
// (auditEnds): nil if one is stored, store.ErrNotFound if none.
func tsaEntry(target string, ends map[string]uint64) func(store.Tx) error {
	return func(tx store.Tx) error {
		chains, err := tx.AuditChains()
		if err != nil {
			return err
		}
		for _, c := range chains {
			err := tx.AuditChainRecords(c.Name, ends[c.Name]+1, func(_ uint64, raw []byte) error {
				e, err := store.DecodeAuditEntry(raw)
				if err != nil {
					return err
				}
				if e.Kind == store.AuditTSAEnrolled && e.Target == target {
					return errFound
				}
				return nil
			})
			switch {
			case errors.Is(err, errFound):
				return nil
			case err != nil:
				return err
			}
		}
		return store.ErrNotFound
	}
}

func (l *HSM) tsaLabel() string {
	if l.TSALabel != "" {
		return l.TSALabel
	}
	return tsa.DefaultLabel
}

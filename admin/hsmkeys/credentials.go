package hsmkeys

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/csc/enroll"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

func (l *HSM) KeyStore() (tokenkeys.KeyStore, error) {
	if l.Keys == nil {
		return nil, act.Errorf(ops.KindUnavailable, "the HSM is not open in this process")
	}
	return l.Keys, nil
}

// CreateCredential performs Service.CreateCredential: the key pair is
// generated in the token, a CSR is signed by it, and the credential is
// stored as pending (unusable) until ImportCertificate attaches a chain.
// Its phases: the request checked (checkCredential), the owner read, the
// key pair and CSR made in the token (generate), the credential and its
// entry written in one transaction; a failure after the key was made
// destroys it, unless the transaction's outcome is unknown and a fenced
// read finds the credential stored (newKey.settle).
func (l *HSM) CreateCredential(ctx context.Context, by principal.Principal, req ops.CreateCredentialRequest) (_ *ops.CreateCredentialResult, err error) {
	// The target is the owner until the credential has an ID: a refusal
	// before it names whom the credential was for.
	a, err := l.Begin(ctx, by, "CreateCredential", store.AuditCredentialEnrolled, "user:"+req.User)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "CreateCredential", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	spec, mode, err := checkCredential(a, req)
	if err != nil {
		return nil, err
	}
	// Check the owner first, so a typo costs no key generation.
	if _, err := l.Users.User(ctx, req.User); err != nil {
		return nil, err
	}
	keys, err := l.KeyStore()
	if err != nil {
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, l.Fail("credential", err)
	}
	k, err := l.generate(ctx, keys, id, req.Label, spec)
	if err != nil {
		return nil, err
	}
	c := &store.Credential{
		ID: id, Owner: req.User, KeyID: k.key.ID, Label: k.label, Algorithm: spec.Algorithm,
		KeyBits: k.key.Bits, Status: store.CredentialPending,
		Multisign: max(req.Multisign, 1), AuthMode: mode, Description: req.Description,
	}
	a.Target, a.Credential = "credential:"+id, id
	a.Set("algorithm", spec.Algorithm)
	a.Set("label", k.label)
	a.Result["key_id"] = hex.EncodeToString(k.key.ID)
	a.Outcome = string(store.CredentialPending)
	a.Reason = fmt.Sprintf("key pair %s generated in the token (label %q), CSR issued%s", spec.Algorithm, k.label, k.note)
	err = a.Update(ctx, func(tx store.Tx) (err error) {
		if err := tx.CreateCredential(c); err != nil {
			return err
		}
		c, err = tx.Credential(id)
		return err
	})
	if err != nil {
		// The credential is stored if the write committed after all.
		if ok, err := k.settle(ctx, a, err, func(tx store.Tx) (err error) {
			c, err = tx.Credential(id)
			return err
		}); !ok {
			return nil, err
		}
	}
	return &ops.CreateCredentialResult{
		Credential: *ops.CredentialViewOf(c),
		CSRPEM:     enroll.CSRPEM(k.csrDER),
	}, nil
}

// checkCredential records on a what CreateCredential was asked and checks
// it: the key's algorithm and subject (enroll.Request.Check), how its
// signatures are authorized, the description.
func checkCredential(a *act.Act, req ops.CreateCredentialRequest) (*enroll.Spec, store.AuthMode, error) {
	a.User = req.User
	if req.Algo != "" {
		a.Set("algorithm", req.Algo)
	}
	if req.Subject != "" {
		a.Set("subject", req.Subject)
	}
	if req.Label != "" {
		a.Set("label", req.Label)
	}
	a.Set("multisign", strconv.Itoa(max(req.Multisign, 1)))
	if req.AuthMode != "" {
		a.Set("auth_mode", req.AuthMode)
	}
	spec, err := enroll.Request{Owner: req.User, Algorithm: req.Algo, Subject: req.Subject}.Check()
	if err != nil {
		return nil, "", act.Errorf(ops.KindInvalid, "%v", err)
	}
	mode, err := ops.CheckAuth(req.Multisign, req.AuthMode)
	if err != nil {
		return nil, "", err
	}
	if err := ops.CheckDescription(req.Description); err != nil {
		return nil, "", err
	}
	return spec, mode, nil
}

// credentialKey is the key pair generate made in the token for a new
// credential, and its CSR.
type credentialKey struct {
	newKey
	key    *enroll.Key
	csrDER []byte
	note   string // what the token does not freeze of the key (tokenkeys.Enroll.AuditNote)
}

// generate makes the key pair of credential id in keys, labelled
// label ("" = signd-<id>), and its CSR. When the CSR fails, the key is
// destroyed again (rollback).
func (l *HSM) generate(ctx context.Context, keys tokenkeys.KeyStore, id, label string, spec *enroll.Spec) (*credentialKey, error) {
	if label == "" {
		label = "signd-" + id
	}
	if len(label) > 128 || !input.Printable(label) {
		return nil, act.Errorf(ops.KindInvalid, "label must be 1 to 128 printable characters")
	}
	if tsa.ReservedLabel(l.tsaLabel(), label) {
		return nil, act.Errorf(ops.KindInvalid, "label %q is reserved for the time-stamping keys (csc.timestamp.label %q)", label, l.tsaLabel())
	}
	ek := &tokenkeys.Enroll{Keys: keys}
	key, csrDER, err := enroll.Generate(ctx, ek, label, spec)
	if key == nil {
		return nil, l.Fail("generate key", err)
	}
	k := &credentialKey{
		newKey: newKey{l: l, keys: keys, id: key.ID, label: label, op: "create credential",
			listed: fmt.Sprintf("`signd credential list` lists no credential %s", id)},
		key: key, csrDER: csrDER, note: ek.AuditNote(),
	}
	if err != nil {
		return nil, k.rollback(ctx, err)
	}
	return k, nil
}

// ImportCertificate performs Service.ImportCertificate.
//
// Its audit entry is credential_enrolled with outcome enabled (the status
// it leaves), as before actors were recorded: the enrolment's second step.
func (l *HSM) ImportCertificate(ctx context.Context, by principal.Principal, req ops.ImportCertificateRequest) (_ *ops.CredentialView, err error) {
	a, err := l.Begin(ctx, by, "ImportCertificate", store.AuditCredentialEnrolled, "credential:"+req.ID)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "ImportCertificate", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Credential = req.ID
	chain, err := enroll.ParseChainPEM([]byte(req.ChainPEM))
	if err != nil {
		return nil, act.Errorf(ops.KindInvalid, "chain: %v", err)
	}
	cred, err := l.getCredential(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	a.User = cred.Owner
	leaf := chain[0]
	a.Set("subject", leaf.Subject.String())
	a.Set("issuer", leaf.Issuer.String())
	a.Set("serial", hex.EncodeToString(leaf.SerialNumber.Bytes()))
	a.Set("chain_length", strconv.Itoa(len(chain)))
	if cred.Status == store.CredentialDisabled {
		return nil, act.Errorf(ops.KindConflict, "credential %q is disabled; enable it before importing a certificate", req.ID)
	}
	keys, err := l.KeyStore()
	if err != nil {
		return nil, err
	}
	key, err := keys.Key(ctx, cred.KeyID)
	if err != nil {
		return nil, l.Fail("credential key", err)
	}
	switch err := enroll.CheckChain(chain, key.Public(), l.Clock()); {
	case errors.Is(err, enroll.ErrLeafKey):
		return nil, act.Errorf(ops.KindInvalid, "the leaf certificate's public key is not the key of credential %q", req.ID)
	case err != nil:
		return nil, act.Errorf(ops.KindInvalid, "%v", err)
	}
	if err := keys.ImportCertificate(ctx, cred.KeyID, cred.Label, chain[0]); err != nil {
		return nil, l.Fail("import certificate", err)
	}
	ders := make([][]byte, len(chain))
	for i, c := range chain {
		ders[i] = c.Raw
	}
	var out *store.Credential
	a.Outcome = string(store.CredentialEnabled)
	a.Reason = "certificate chain imported: " + chain[0].Subject.String()
	err = a.Update(ctx, func(tx store.Tx) (err error) {
		c, err := tx.Credential(req.ID)
		if err != nil {
			return err
		}
		c.Chain = ders
		c.Status = store.CredentialEnabled
		if err := tx.PutCredential(c); err != nil {
			return err
		}
		a.User = c.Owner
		out, err = tx.Credential(req.ID)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("credential %q", req.ID), err)
	}
	return ops.CredentialViewOf(out), nil
}

func (l *HSM) getCredential(ctx context.Context, id string) (*store.Credential, error) {
	var c *store.Credential
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.Credential(id)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("credential %q", id), err)
	}
	return c, nil
}

// ListCredentials performs Service.ListCredentials. owner "" lists every credential.
func (l *HSM) ListCredentials(ctx context.Context, by principal.Principal, owner string) (_ []ops.CredentialView, err error) {
	var filter map[string]string
	if owner != "" {
		filter = map[string]string{"owner": owner}
	}
	a, err := l.Read(ctx, by, "ListCredentials", "credentials", filter)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.User = owner
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	var cs []store.Credential
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		if owner != "" {
			if _, err := tx.User(owner); err != nil {
				return err
			}
		}
		cs, err = tx.Credentials(owner, "", 0)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("user %q", owner), err)
	}
	out := make([]ops.CredentialView, 0, len(cs))
	for i := range cs {
		out = append(out, *ops.CredentialViewOf(&cs[i]))
	}
	return out, nil
}

// ShowCredential performs Service.ShowCredential.
func (l *HSM) ShowCredential(ctx context.Context, by principal.Principal, id string) (_ *ops.CredentialView, err error) {
	a, err := l.Read(ctx, by, "ShowCredential", "credential:"+id, nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Credential = id
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	c, err := l.getCredential(ctx, id)
	if err != nil {
		return nil, err
	}
	return ops.CredentialViewOf(c), nil
}

// SetCredentialAuth performs Service.SetCredentialAuth.
func (l *HSM) SetCredentialAuth(ctx context.Context, by principal.Principal, req ops.SetCredentialAuthRequest) (_ *ops.CredentialView, err error) {
	a, err := l.Begin(ctx, by, "SetCredentialAuth", store.AuditCredentialAuth, "credential:"+req.ID)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "SetCredentialAuth", req); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Credential = req.ID
	if req.Multisign != 0 {
		a.Set("multisign", strconv.Itoa(req.Multisign))
	}
	if req.AuthMode != "" {
		a.Set("auth_mode", req.AuthMode)
	}
	mode, err := ops.CheckAuth(req.Multisign, req.AuthMode)
	if err != nil {
		return nil, err
	}
	if req.Multisign == 0 && req.AuthMode == "" {
		return nil, act.Errorf(ops.KindInvalid, "nothing to change: give --multisign or --auth-mode")
	}
	var out *store.Credential
	var revoked *ops.RevokedView
	err = a.Update(ctx, func(tx store.Tx) error {
		c, err := tx.Credential(req.ID)
		if err != nil {
			return err
		}
		if req.Multisign != 0 {
			c.Multisign = req.Multisign
		}
		if req.AuthMode != "" {
			c.AuthMode = mode
		}
		if err := tx.PutCredential(c); err != nil {
			return err
		}
		r, err := tx.RevokeCredential(c.ID)
		if err != nil {
			return err
		}
		revoked = ops.RevokedViewOf(r)
		a.User = c.Owner
		a.Result["revoked"] = revoked.String()
		a.Reason = fmt.Sprintf("authorization set by an admin: multisign %d, authMode %s; revoked %s", c.Multisign, c.AuthMode, revoked)
		out, err = tx.Credential(c.ID)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("credential %q", req.ID), err)
	}
	v := ops.CredentialViewOf(out)
	v.Revoked = revoked
	return v, nil
}

// SetCredentialStatus performs Service.SetCredentialStatus. A pending credential (no
// certificate yet) cannot be enabled. Disabling revokes the SADs, codes and
// pending requests bound to the credential.
func (l *HSM) SetCredentialStatus(ctx context.Context, by principal.Principal, id string, enabled bool) (_ *ops.CredentialView, err error) {
	kind, status := store.AuditCredentialDisabled, store.CredentialDisabled
	if enabled {
		kind, status = store.AuditCredentialEnabled, store.CredentialEnabled
	}
	a, err := l.Begin(ctx, by, "SetCredentialStatus", kind, "credential:"+id)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "SetCredentialStatus", ops.StatusRequest{Name: id, Enabled: enabled}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Credential = id
	a.Set("status", string(status))
	var out *store.Credential
	var revoked *ops.RevokedView
	err = a.Update(ctx, func(tx store.Tx) (err error) {
		c, err := tx.Credential(id)
		if err != nil {
			return err
		}
		switch {
		case enabled && len(c.Chain) == 0:
			return act.Errorf(ops.KindConflict, "credential %q has no certificate yet: import one with `signd credential import-cert %s --chain FILE.pem`", id, id)
		case enabled:
			c.Status, c.DisabledBy = store.CredentialEnabled, ""
		default:
			c.Status, c.DisabledBy = store.CredentialDisabled, store.DisabledByAdmin
		}
		if err := tx.PutCredential(c); err != nil {
			return err
		}
		a.User, a.Reason = c.Owner, "by an admin"
		if !enabled {
			r, err := tx.RevokeCredential(id)
			if err != nil {
				return err
			}
			revoked = ops.RevokedViewOf(r)
			a.Reason = "by an admin; revoked " + revoked.String()
			a.Result["revoked"] = revoked.String()
		}
		out, err = tx.Credential(id)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("credential %q", id), err)
	}
	v := ops.CredentialViewOf(out)
	v.Revoked = revoked
	return v, nil
}

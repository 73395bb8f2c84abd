package signhash

import (
	"context"
	"crypto"
	"errors"
	"net/http"
	"runtime/trace"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// What a Signer failure means for the caller and the audit log.
type signerFailure int

const (
	failureError       signerFailure = iota // anything else: 500
	failureUnavailable                      // HSM busy or reconnecting: 503 with Retry-After
	failureKey                              // the credential's key cannot sign, the HSM is fine: 400
	failureKeyMissing                       // this node's HSM lacks the key (another node's may have it): 503
	failureUnsupported                      // the HSM cannot make the requested algorithm with the key: 400
)

// What a Signer error answers about itself. The errors of package hsm
// (and of its software token) implement these methods; signhash asks them
// with errors.As and does not import hsm. An error that answers none is an
// internal failure (500); one that answers Unavailable
// (protocol.UnavailableError: busy, reconnecting, closed, its PIN refused)
// is 503.
type (
	// keyMissingError: this node's HSM does not hold the key; another
	// node's may (Handler.Clustered).
	keyMissingError interface{ KeyMissing() bool }
	// unsupportedError: the HSM cannot make the requested algorithm with
	// the key while it works: 400 naming signAlgo.
	unsupportedError interface{ Unsupported() bool }
	// keyUnusableError: the key cannot sign while the HSM works (gone,
	// ambiguous, against the key policy): 400 "disabled".
	keyUnusableError interface{ KeyUnusable() bool }
	// notSignedError: no signature was made, so a SAD the request
	// consumed may be given back.
	notSignedError interface{ NotSigned() bool }
)

// classifySigner sorts a Signer error by what it answers: unavailable,
// then (on a node of a cluster) missing on this node, unsupported,
// unusable.
func (h *Handler) classifySigner(err error) signerFailure {
	switch {
	case protocol.Answers(err, protocol.UnavailableError.Unavailable):
		return failureUnavailable
	case h.Clustered && protocol.Answers(err, keyMissingError.KeyMissing):
		return failureKeyMissing
	case protocol.Answers(err, unsupportedError.Unsupported):
		return failureUnsupported
	case protocol.Answers(err, keyUnusableError.KeyUnusable):
		return failureKey
	}
	return failureError
}

// metricsOutcome is the signHash metrics outcome of a failure.
func (f signerFailure) metricsOutcome() string {
	switch f {
	case failureUnavailable, failureKeyMissing:
		return "unavailable"
	case failureKey, failureUnsupported:
		return "refused"
	}
	return "error"
}

// auditReason is the audit reason of a failure; a fixed text, never the
// HSM's error (that goes to the log).
func (f signerFailure) auditReason() string {
	switch f {
	case failureUnavailable:
		return "signing device busy or unavailable"
	case failureKey:
		return "signing key unusable in the HSM"
	case failureKeyMissing:
		return "signing key not available on this node"
	case failureUnsupported:
		return "signing algorithm not supported by the HSM for this key"
	}
	return "signing failed"
}

// response is what the client gets for a failure: the Signer error itself
// for 503 and 500 (the error renderer writes it without detail), the
// specification's "disabled" refusal for an unusable key, and 503 naming
// the node for a key this node's HSM lacks (the client tries another).
func (f signerFailure) response(err error) error {
	switch f {
	case failureKey:
		return protocol.BadRequest(protocol.DescCredDisabled)
	case failureUnsupported:
		return protocol.BadRequest(descAlgoUnsupported)
	case failureKeyMissing:
		return &oauth.Error{Code: oauth.CodeTemporarilyUnavailable, Description: descKeyMissing,
			Status: http.StatusServiceUnavailable, Header: protocol.RetryLater()}
	}
	return err
}

// logKeyFailure logs, with the credential ID, a key failure: a key that
// cannot sign is an error of that credential; a key missing on this node
// is a warning (the node's HSM lags or lacks a key other nodes hold).
func (h *Handler) logKeyFailure(ctx context.Context, f signerFailure, credential string, err error) {
	switch f {
	case failureKey:
		h.Logger.ErrorContext(ctx, "csc: the credential's key cannot sign", "credential", credential, "err", err)
	case failureKeyMissing:
		h.Logger.WarnContext(ctx, "csc: the credential's key is not on this node's HSM; another node may sign", "credential", credential, "err", err)
	}
}

// preflight asks the Signer, before any SAD is consumed, whether the key of
// the caller's credential could sign now (Signer.CheckKey: HSM available, a
// session free, the key known). A credential that is unknown, someone
// else's, pending or disabled is not looked at: decide refuses it without
// the HSM being asked anything.
//
// A SchemeChecker is asked for the request's scheme opts, so that an
// algorithm the token cannot make with the key is refused here too.
func (h *Handler) preflight(ctx context.Context, g *oauth.Grant, credentialID string, opts crypto.SignerOpts) error {
	var keyID []byte
	reg := trace.StartRegion(ctx, "preflight.view")
	err := h.Store.View(ctx, func(tx protocol.Tx) error {
		cred, err := tx.Credential(credentialID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		case protocol.UsableBy(cred, g.Username) && cred.Status == store.CredentialEnabled:
			keyID = cred.KeyID
		}
		return nil
	})
	reg.End()
	if err != nil || keyID == nil {
		return err
	}
	defer trace.StartRegion(ctx, "preflight.checkkey").End()
	if sc, ok := h.Signer.(SchemeChecker); ok {
		return sc.CheckSign(ctx, keyID, opts)
	}
	return h.Signer.CheckKey(ctx, keyID)
}

// preflightRefused answers a request whose preflight failed. Its SAD was
// not touched; the refusal is audited like any other.
func (h *Handler) preflightRefused(ctx context.Context, g *oauth.Grant, req signHashRequest, cause error) (signHashOutcome, error) {
	f := h.classifySigner(cause)
	h.logKeyFailure(ctx, f, protocol.AuditCredential(req.credentialID), cause)
	err := h.Store.Batch(context.WithoutCancel(ctx), func(tx protocol.Tx) error {
		return tx.AppendAudit(req.auditEntry(h.Now(), g, store.AuditRefused, f.auditReason()+" (SAD not consumed)"))
	})
	if err != nil {
		return signHashOutcome{result: "error"}, err
	}
	h.Logger.InfoContext(ctx, "csc: signHash refused before the SAD was consumed", "user", g.Username, "client", g.ClientID,
		"credential", protocol.AuditCredential(req.credentialID), "reason", f.auditReason())
	return signHashOutcome{result: f.metricsOutcome()}, f.response(cause)
}

// signFailed answers a granted request whose signing failed. When the
// error proves that no signature was made (it answers NotSigned: none of
// the request's hashes was signed), the SAD is given back (restoreSAD);
// otherwise it stays spent and a "failed" entry follows the grant.
func (h *Handler) signFailed(ctx context.Context, e *store.AuditEntry, d decision, cause error) (signHashOutcome, error) {
	f := h.classifySigner(cause)
	out := signHashOutcome{result: f.metricsOutcome()}
	h.logKeyFailure(ctx, f, e.Credential, cause)
	if d.sad != nil && protocol.Answers(cause, notSignedError.NotSigned) {
		var done bool
		if done, out.restored = h.restoreSAD(ctx, e, d, f); done {
			return out, f.response(cause)
		}
	}
	h.auditFailure(ctx, e, d.seq, cause)
	return out, f.response(cause)
}

// restoreSAD gives back the SAD that grant d consumed, after signing failed
// without making any signature. In one transaction it stores the SAD again
// exactly as it was (same value, bindings and original expiry) and appends
// a new audit entry "restored" whose ref is the grant: the log is append
// only, the grant entry is never changed. A SAD that expired meanwhile is
// not stored again; the entry is then "failed". It reports whether the
// transaction committed (done) and whether the SAD is back (restored);
// when it did not commit, the SAD stays spent, which is safe, and the
// caller records the failure.
//
// No double spend: only the request that consumed a SAD restores it, once,
// and only after the Signer proved no signature exists.
func (h *Handler) restoreSAD(ctx context.Context, e *store.AuditEntry, d decision, f signerFailure) (done, restored bool) {
	reason := "not signed: " + map[signerFailure]string{
		failureUnavailable: "device error", failureKey: "signing key unusable", failureError: "signing failed",
		failureKeyMissing: "signing key not available on this node",
	}[f]
	err := h.Store.Batch(ctx, func(tx protocol.Tx) error {
		restored = false // Batch may run this twice
		a := *e
		a.Ref = d.seq
		if !h.Now().Before(d.sad.ExpiresAt) {
			a.Outcome, a.Reason = store.AuditFailed, reason+"; SAD expired meanwhile"
			return tx.AppendAudit(&a)
		}
		// An admin action (client removed, user removed or disabled,
		// credential disabled) between the consume and now revoked what
		// the SAD hangs on: it is not given back.
		why, err := protocol.RevokedSAD(tx, d.sad)
		if err == nil && why == "" {
			why, err = credentialGone(tx, d.sad.CredentialID)
		}
		if err != nil {
			return err
		}
		if why != "" {
			a.Outcome, a.Reason = store.AuditFailed, reason+"; SAD not restored: "+why
			return tx.AppendAudit(&a)
		}
		sad := *d.sad
		if err := tx.CreateToken(&sad); err != nil {
			return err
		}
		a.Outcome, a.Reason = store.AuditRestored, reason+"; SAD restored"
		if err := tx.AppendAudit(&a); err != nil {
			return err
		}
		restored = true
		return nil
	})
	if err != nil {
		h.Logger.ErrorContext(ctx, "csc: giving back the SAD of a failed signature failed; it stays consumed", "audit_ref", d.seq, "err", err)
		return false, false
	}
	h.Logger.InfoContext(ctx, "csc: signing failed before any signature was made", "credential", e.Credential,
		"audit_ref", d.seq, "sad_restored", restored)
	return true, restored
}

// credentialGone says why the SAD's credential can no longer sign (removed
// or not enabled), or "".
func credentialGone(tx protocol.Tx, id string) (string, error) {
	cred, err := tx.Credential(id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "credential removed", nil
	case err != nil:
		return "", err
	case cred.Status != store.CredentialEnabled:
		return "credential " + string(cred.Status), nil
	}
	return "", nil
}

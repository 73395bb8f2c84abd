package signhash

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/trace"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// signHashRequest is a parsed, syntactically valid signHash request.
type signHashRequest struct {
	credentialID string
	sad          string
	hashes       [][]byte // digests of algo's hash, request order
	algo         signAlgo
	// hashCount and hashesRaw stand for the hash array in a refusal's
	// audit entry: how many entries were read (at most one past the cap)
	// and its JSON text as received (nil when absent), which the entry
	// records as a SHA-256.
	hashCount int
	hashesRaw []byte
	// signAlgoOID and hashAlgoOID are the request's signAlgo and hashAlgo
	// as sent, for the audit entry ("" when absent or not strings); read
	// first, so that a refusal for any parameter still records them.
	signAlgoOID, hashAlgoOID string
}

// Descriptions of signHash's own refusals.
const (
	descAlgoUnsupported = "Invalid parameter signAlgo: the signing device cannot make this algorithm with this credential's key"
	descKeyMissing      = "The signing key is not available on this node, try again later"
	descCredIDsConflict = "Parameters credentialID and credentialIDs differ"
)

type signHashResponse struct {
	Signatures []string `json:"signatures"`
}

// parseSignHash checks the parameters in a fixed order, returning the first
// problem with the specification's description. On a refusal req holds
// what was parsed before it (for the audit entry). A hash array of more
// than maxHashes entries is refused before any entry is decoded; entries
// past maxHashes+1 are not even looked at.
func parseSignHash(p protocol.Params, maxHashes int) (req signHashRequest, e *oauth.Error) {
	req.hashesRaw = p["hash"]
	req.signAlgoOID, _, _ = p.Str("signAlgo", false)
	req.hashAlgoOID, _, _ = p.Str("hashAlgo", false)
	if req.credentialID, e = credentialIDParam(p); e != nil {
		return req, e
	}
	if req.sad, _, e = p.Str("SAD", true); e != nil {
		return req, e
	}
	if req.hashes, req.hashCount, e = protocol.HashArray(p, maxHashes); e != nil {
		return req, e
	}
	if req.algo, e = parseSignAlgo(p); e != nil {
		return req, e
	}
	for _, d := range req.hashes {
		if len(d) != req.algo.opts.HashFunc().Size() {
			return req, protocol.BadRequest(protocol.DescDigestLength)
		}
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return req, protocol.Invalid("clientData")
	}
	return req, nil
}

// credentialIDParam reads credentialID or credentialIDs: the service specification's table
// names the latter, its sample the former, and both are accepted;
// credentialIDs may be a string or an array of exactly one string. Both
// present must agree.
func credentialIDParam(p protocol.Params) (string, *oauth.Error) {
	id, hasID, e := p.Str("credentialID", false)
	if e != nil || hasID && id == "" {
		return "", protocol.Missing("string", "credentialID")
	}
	if !p.Has("credentialIDs") {
		if !hasID {
			return "", protocol.Missing("string", "credentialID")
		}
		return id, nil
	}
	var ids string
	switch p.Kind("credentialIDs") {
	case '"':
		ids, _, e = p.Str("credentialIDs", true)
		if e != nil {
			return "", e
		}
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(p["credentialIDs"], &list); err != nil || len(list) != 1 {
			return "", protocol.Invalid("credentialIDs")
		}
		var ok bool
		if ids, ok = protocol.JSONString(list[0]); !ok || ids == "" {
			return "", protocol.Missing("string", "credentialIDs")
		}
	default:
		return "", protocol.Missing("string", "credentialIDs")
	}
	if hasID && id != ids {
		return "", protocol.BadRequest(descCredIDsConflict)
	}
	return ids, nil
}

// decision is the outcome of the signHash transaction.
type decision struct {
	err       *oauth.Error // refusal; nil when granted
	reason    string       // audit reason of a refusal
	sadReason string       // metrics: "" when the SAD was not looked at
	keyID     []byte       // granted: the HSM key
	sad       *store.Token // granted: the SAD consumed, as it was stored
	seq       uint64       // the audit entry's sequence number
}

func refuse(e *oauth.Error, reason, sadReason string) decision {
	return decision{err: e, reason: reason, sadReason: sadReason}
}

// signHashOutcome is what a signHash request came to: the signatures of a
// granted request, and what the observer (observeSignHash) records.
type signHashOutcome struct {
	sigs [][]byte // one per hash, request order; nil unless signed
	// result is the request's metrics outcome: "signed", "refused",
	// "unavailable" or "error" ("" counts as "error").
	result string
	// sad is the decision about the SAD: "consumed", "refused" (reason
	// sadReason) or "" when no SAD was looked at; restored says that it
	// was given back after signing failed before any signature.
	sad, sadReason string
	restored       bool
}

// signHash is POST /csc/v1/signatures/signHash: parse, then the phases
// (signHashes), then the observer and the response.
func (h *Handler) signHash(c echo.Context) error {
	start := time.Now()
	ctx := c.Request().Context()
	var out signHashOutcome
	defer func() { h.observeSignHash(time.Since(start), out) }()

	reg := trace.StartRegion(ctx, "params")
	g, req, perr := protocol.ParseRequest(c, h.parseSignHash)
	reg.End()
	var err error
	if perr != nil {
		out, err = h.refuseMalformed(ctx, g, req, perr)
	} else {
		out, err = h.signHashes(ctx, g, req)
	}
	if err != nil {
		return err
	}
	res := signHashResponse{Signatures: make([]string, len(out.sigs))}
	for i, sig := range out.sigs {
		res.Signatures[i] = base64.StdEncoding.EncodeToString(sig)
	}
	defer trace.StartRegion(ctx, "respond").End()
	return c.JSON(http.StatusOK, res)
}

// observeSignHash records a signHash outcome in the metrics: the SAD's
// fate, then the request with its duration d.
func (h *Handler) observeSignHash(d time.Duration, out signHashOutcome) {
	if h.Metrics == nil {
		return
	}
	switch out.sad {
	case "consumed":
		h.Metrics.ObserveSAD("consumed", "")
	case "refused":
		h.Metrics.ObserveSAD("refused", out.sadReason)
	}
	if out.restored {
		h.Metrics.ObserveSAD("restored", "")
	}
	if out.result == "" {
		out.result = "error"
	}
	h.Metrics.ObserveSignHash(d, out.result)
}

// refuseMalformed audits a request refused while it was parsed: it was
// made with a valid Bearer. Nothing was looked up, so no SAD is touched.
func (h *Handler) refuseMalformed(ctx context.Context, g *oauth.Grant, req signHashRequest, perr *oauth.Error) (signHashOutcome, error) {
	err := h.Store.Batch(context.WithoutCancel(ctx), func(tx protocol.Tx) error {
		return tx.AppendAudit(req.auditEntry(h.Now(), g, store.AuditRefused, perr.Description))
	})
	if err != nil {
		return signHashOutcome{result: "error"}, err
	}
	return signHashOutcome{result: "refused"}, perr
}

// signHashes runs the phases of a parsed signHash request, with no HTTP in
// them: the preflight (can the HSM sign with the credential's key now?
// A request that cannot sign costs the user nothing), the consuming
// transaction, during whose commit the HSM signs (consume, signing.go),
// and the join, after which the signatures may leave. The client going
// away no longer cancels anything once the transaction started. The error
// is what the client gets (a protocol error or one the renderer maps).
func (h *Handler) signHashes(ctx context.Context, g *oauth.Grant, req signHashRequest) (signHashOutcome, error) {
	reg := trace.StartRegion(ctx, "preflight")
	err := h.preflight(ctx, g, req.credentialID, req.algo.opts)
	reg.End()
	if err != nil {
		return h.preflightRefused(ctx, g, req, err)
	}

	sctx := context.WithoutCancel(ctx)
	reg = trace.StartRegion(ctx, "batch")
	d, inFlight, err := h.consume(sctx, g, req)
	reg.End()
	if err != nil {
		return signHashOutcome{result: "error"}, err
	}
	if d.err != nil {
		if inFlight != nil {
			inFlight.wait() // an earlier run granted, the committed one did not: discarded
		}
		h.Logger.InfoContext(ctx, "csc: signHash refused", "user", g.Username, "client", g.ClientID,
			"credential", protocol.AuditCredential(req.credentialID), "reason", d.reason, "audit_seq", d.seq)
		out := signHashOutcome{result: "refused"}
		if d.sadReason != "" {
			out.sad, out.sadReason = "refused", d.sadReason
		}
		return out, d.err
	}

	// The SAD is gone and the grant is on record: the signatures may leave.
	reg = trace.StartRegion(ctx, "join")
	res := h.signed(sctx, inFlight, d.keyID, req.algo.opts, req.hashes)
	reg.End()
	if res.err != nil {
		// Only a failure before any signature was made may give the SAD
		// back: with failed > 0 signatures exist.
		out, err := h.signFailed(sctx, req.auditEntry(h.Now(), g, store.AuditGranted, ""), d, res.err)
		out.sad = "consumed"
		return out, err
	}
	return signHashOutcome{sigs: res.sigs, result: "signed", sad: "consumed"}, nil
}

// consume runs the signHash write transaction: decide, and append the
// decision's audit entry. The first run that grants starts the signing
// (signing.go), which then overlaps the commit; Batch may run the
// function again, and only what the committed run decided counts. When
// the commit fails, nothing was consumed and nothing recorded: whatever
// the HSM made is discarded. The signing in flight, if any, is returned
// to be joined (signed) or waited for.
func (h *Handler) consume(ctx context.Context, g *oauth.Grant, req signHashRequest) (decision, *signing, error) {
	var d decision
	var inFlight *signing
	err := h.Store.Batch(ctx, func(tx protocol.Tx) error {
		defer trace.StartRegion(ctx, "tx").End()
		var err error
		if d, err = h.decide(tx, g, req); err != nil {
			return err
		}
		e := req.auditEntry(h.Now(), g, store.AuditGranted, "")
		if d.err != nil {
			e = req.auditEntry(h.Now(), g, store.AuditRefused, d.reason)
		} else if inFlight == nil {
			inFlight = h.startSigning(ctx, d.keyID, req.algo.opts, req.hashes)
		}
		if err := tx.AppendAudit(e); err != nil {
			return err
		}
		d.seq = e.Seq
		return nil
	})
	if err != nil {
		if inFlight != nil {
			if res := inFlight.wait(); res.err != nil {
				h.Logger.ErrorContext(ctx, "csc: signing failed while the SAD's consumption failed to commit", "err", res.err)
			}
		}
		return decision{}, nil, err
	}
	return d, inFlight, nil
}

// auditEntry is the audit entry of this request at now. A grant lists its
// hashes (exactly the SAD's, so bounded by numSignatures). A refusal has a
// fixed size whatever the request held (CSC v1 §11.9 asks for the log, not
// for a copy of every rejected payload): the count and digest of the hash
// array, and an over-long credentialID only as a digest.
func (req *signHashRequest) auditEntry(now time.Time, g *oauth.Grant, outcome, reason string) *store.AuditEntry {
	e := &store.AuditEntry{
		Time: now, Kind: store.AuditSignHash, User: g.Username, Client: g.ClientID,
		Credential: protocol.AuditCredential(req.credentialID), Outcome: outcome, Reason: reason,
		SignAlgo: auditOID(req.signAlgoOID), HashAlgo: auditOID(req.hashAlgoOID),
	}
	if outcome == store.AuditRefused {
		e.HashCount = req.hashCount
		if req.hashesRaw != nil {
			sum := sha256.Sum256(req.hashesRaw)
			e.HashesSHA256 = hex.EncodeToString(sum[:])
		}
		return e
	}
	e.Hashes = protocol.HexHashes(req.hashes)
	return e
}

// parseSignHash parses a signHash body with the handler's hash cap.
func (h *Handler) parseSignHash(p protocol.Params) (signHashRequest, *oauth.Error) {
	return parseSignHash(p, h.MaxHashes)
}

// auditOID is how the audit entry records a signAlgo or hashAlgo: as sent
// when it is an OID in dotted-decimal form (also one signd does not sign
// with, so that the log shows what was asked), else "" so that the client
// cannot put arbitrary text into entries.
func auditOID(s string) string {
	if !store.IsAuditOID(s) {
		return ""
	}
	return s
}

// auditFailure records that the HSM failed after the grant seq. The SAD
// stays consumed: the client needs a new one.
func (h *Handler) auditFailure(ctx context.Context, e *store.AuditEntry, seq uint64, cause error) {
	reason := h.classifySigner(cause).auditReason()
	err := h.Store.Batch(ctx, func(tx protocol.Tx) error {
		f := *e
		f.Outcome, f.Reason, f.Ref = store.AuditFailed, reason, seq
		return tx.AppendAudit(&f)
	})
	if err != nil {
		h.Logger.ErrorContext(ctx, "csc: audit entry of a failed signature lost", "audit_ref", seq, "err", err)
	}
}

// decide runs inside the signHash write transaction. The credential is
// checked first and leaves the SAD alone when it fails; once a SAD with the
// presented value exists it is deleted, and every check after that refuses
// with the SAD already gone. It returns an error only for store failures
// (the transaction is rolled back and nothing is consumed).
func (h *Handler) decide(tx protocol.Tx, g *oauth.Grant, req signHashRequest) (decision, error) {
	now := h.Now()
	cred, e, why, err := h.Certs.Credential(tx, req.credentialID, g.Username, now)
	if err != nil {
		return decision{}, err
	} else if e != nil {
		return refuse(e, why, ""), nil
	}
	if !req.algo.fits(cred.Algorithm) {
		return refuse(wrongKeyAlgo(cred.Algorithm), "signAlgo "+req.algo.oid+" for a "+cred.Algorithm+" key", ""), nil
	}
	if e := req.algo.saltRefusal(cred.KeyBits); e != nil {
		return refuse(e, "RSASSA-PSS salt length for a "+cred.Algorithm+" key", ""), nil
	}

	fp := store.Fingerprint(req.sad)
	sad, err := tx.Token(fp)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return refuse(protocol.Invalid("SAD"), "unknown SAD", "unknown"), nil
	case err != nil:
		return decision{}, err
	case sad.Kind != store.TokenSAD:
		// An access token is never a SAD, and is not consumed either.
		return refuse(protocol.Invalid("SAD"), "access token presented as SAD", "unknown"), nil
	}
	if err := tx.DeleteToken(fp); err != nil {
		return decision{}, err
	}
	switch {
	case sad.Username != g.Username:
		return refuse(protocol.Invalid("SAD"), "SAD of another user (burned)", "user"), nil
	case sad.ClientID != g.ClientID:
		return refuse(protocol.Invalid("SAD"), "SAD of another client (burned)", "client"), nil
	case sad.CredentialID != cred.ID:
		return refuse(protocol.Invalid("SAD"), "SAD for another credential (burned)", "credential"), nil
	case !now.Before(sad.ExpiresAt):
		return refuse(protocol.BadRequest(protocol.DescSADExpired), "SAD expired (burned)", "expired"), nil
	case len(req.hashes) != len(sad.Hashes): // numSignatures
		return refuse(protocol.BadRequest(protocol.DescHashNotAuth), fmt.Sprintf("%d hashes, the SAD authorizes %d (burned)", len(req.hashes), len(sad.Hashes)), "hash"), nil
	case !protocol.SameHashes(sad.Hashes, req.hashes):
		return refuse(protocol.BadRequest(protocol.DescHashNotAuth), "hashes differ from the SAD's (burned)", "hash"), nil
	}
	if why, err := protocol.RevokedSAD(tx, sad); err != nil {
		return decision{}, err
	} else if why != "" {
		return refuse(protocol.Invalid("SAD"), why, "revoked"), nil
	}
	return decision{keyID: cred.KeyID, sad: sad, sadReason: "consumed"}, nil
}

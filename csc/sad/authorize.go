package sad

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// PINChecker checks a user's signing PIN (and second factor) with the
// consent page's lockout; *passwords.Checker is one. Besides the outcome
// it returns the user's secret generation the check read
// (store.User.SecretGeneration): the SAD is written only while it is
// still the stored one.
type PINChecker interface {
	CheckSigningPIN(ctx context.Context, username, pin, otp string) (passwords.PINResult, uint64, error)
}

// DefaultSADTTL is the lifetime of a SAD credentials/authorize issues when
// Handler.SADTTL is not set (oauth.sad_ttl's default).
const DefaultSADTTL = 5 * time.Minute

// maxSADExtensions bounds extendTransaction: a SAD never expires later
// than this many SAD lifetimes after the user authenticated.
const maxSADExtensions = 12

// Limits of credentials/authorize parameters.
const (
	maxPINLen = 256 // longer cannot be a PIN; refused before hashing
	maxOTPLen = 16
)

// Descriptions of explicit authorization (CSC v1 §11.6 and reference/csc.md).
const (
	descNumSignatures   = "Invalid value for parameter numSignatures"
	descHashCount       = "The number of hashes must equal numSignatures"
	descPINInvalid      = "The PIN is invalid"
	descPINOTPInvalid   = "The PIN or the OTP is invalid"
	descPINLocked       = "PIN locked"
	descPINUnusable     = "No signing PIN is set for this account"
	descNotExplicit     = "The credential's authMode is oauth2code: obtain the SAD with the OAuth 2.0 scope credential"
	descNoExtension     = "The credential's multisign is 1: its SAD cannot be extended"
	descExtensionLimit  = "The SAD cannot be extended any further: authorize again"
	descNoOnlineOTP     = "The credential has no online OTP: use the code of the authenticator app"
	codeInvalidPIN      = "invalid_pin"
	auditReasonExtended = "extendTransaction"
)

type sadResponse struct {
	SAD       string `json:"SAD"`
	ExpiresIn int64  `json:"expiresIn"`
}

// authorizeRequest is a parsed credentials/authorize request.
type authorizeRequest struct {
	credentialID string
	hashes       [][]byte
	pin, otp     string
	hasOTP       bool
}

// parseAuthorize checks the parameters of credentials/authorize in a fixed
// order, at most MaxHashes hashes. hash is required: every SAD of signd is
// bound to its hashes (SCAL 2).
func (h *Handler) parseAuthorize(p protocol.Params) (req authorizeRequest, e *oauth.Error) {
	maxHashes := h.MaxHashes
	if req.credentialID, _, e = p.Str("credentialID", true); e != nil {
		return req, e
	}
	n, ok, e := p.PositiveInt("numSignatures")
	switch {
	case e != nil && e.Description == protocol.Missing("integer", "numSignatures").Description:
		return req, e
	case e != nil:
		return req, protocol.BadRequest(descNumSignatures)
	case !ok:
		return req, protocol.Missing("integer", "numSignatures")
	}
	if n > maxHashes {
		return req, protocol.BadRequest(protocol.DescTooMany)
	}
	if req.hashes, _, e = protocol.HashArray(p, maxHashes); e != nil {
		return req, e
	}
	if len(req.hashes) != n {
		return req, protocol.BadRequest(descHashCount)
	}
	if req.pin, _, e = p.Str("PIN", false); e != nil {
		return req, e
	}
	if len(req.pin) > maxPINLen {
		return req, protocol.Invalid("PIN")
	}
	if req.otp, req.hasOTP, e = p.Str("OTP", false); e != nil {
		return req, e
	}
	if len(req.otp) > maxOTPLen {
		return req, protocol.Invalid("OTP")
	}
	if d, _, e := p.Str("description", false); e != nil {
		return req, e
	} else if len(d) > protocol.MaxDescription {
		return req, protocol.Invalid("description")
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return req, protocol.Invalid("clientData")
	}
	return req, nil
}

// explicitCredential reads the credential and the user of an authorize
// request in tx and checks that the user may authorize n signatures with
// it.
func (h *Handler) explicitCredential(tx protocol.Tx, username, id string, n int) (*store.User, *oauth.Error, string, error) {
	cred, e, why, err := h.Certs.Credential(tx, id, username, h.Now())
	if e != nil || err != nil {
		return nil, e, why, err
	}
	switch {
	case cred.AuthMode != store.AuthExplicit:
		return nil, protocol.BadRequest(descNotExplicit), "authMode oauth2code", nil
	case n > cred.Multisign:
		return nil, protocol.BadRequest(protocol.DescTooMany), fmt.Sprintf("%d signatures, multisign %d", n, cred.Multisign), nil
	}
	u, err := tx.User(username)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, protocol.Invalid("credentialID"), "user removed", nil
	case err != nil:
		return nil, nil, "", err
	case u.Status != store.UserActive:
		return nil, protocol.Invalid("credentialID"), "user disabled", nil
	}
	return u, nil, "", nil
}

// authorize is POST /csc/v1/credentials/authorize (CSC v1 §11.6).
func (h *Handler) authorize(c echo.Context) (err error) {
	defer h.observeAuthorize("authorize", &err)
	return protocol.JSONMethod(h.parseAuthorize, h.authorizeSAD)(c)
}

// authorizeSAD runs the phases of credentials/authorize: the credential
// and the user checked, the PIN (and OTP) checked with the lockout, the
// SAD issued. Every refusal after the parameters is audited.
func (h *Handler) authorizeSAD(ctx context.Context, g *oauth.Grant, req authorizeRequest) (sadResponse, error) {
	var user *store.User
	var e *oauth.Error
	var why string
	err := h.Store.View(ctx, func(tx protocol.Tx) (err error) {
		user, e, why, err = h.explicitCredential(tx, g.Username, req.credentialID, len(req.hashes))
		return err
	})
	if err != nil {
		return sadResponse{}, err
	}
	if e != nil {
		return sadResponse{}, h.refuseAuthorize(ctx, req.auditEntry(h.Now(), g, store.AuditRefused, why), e)
	}
	gen, err := h.checkPIN(ctx, g, req, user.TOTPSecret != "")
	if err != nil {
		return sadResponse{}, err
	}
	return h.issueSAD(ctx, g, req, gen)
}

// checkPIN checks the request's PIN, and its OTP when the user has a
// second factor (withOTP), with the authorization server's lockout, and
// returns the user's secret generation the check read. A wrong, locked or
// unusable PIN, or one replaced while it was checked, is audited.
func (h *Handler) checkPIN(ctx context.Context, g *oauth.Grant, req authorizeRequest, withOTP bool) (uint64, error) {
	switch {
	case req.pin == "":
		return 0, protocol.Missing("string", "PIN")
	case withOTP && !req.hasOTP:
		return 0, protocol.Missing("string", "OTP")
	}
	ctx = passwords.WithOrigin(ctx, passwords.Origin{Client: g.ClientID, Door: passwords.DoorCredentialsPIN})
	res, gen, err := h.PIN.CheckSigningPIN(ctx, g.Username, req.pin, req.otp)
	if err != nil {
		return 0, err
	}
	refuse := func(reason string, e *oauth.Error) error {
		return h.refuseAuthorize(ctx, req.auditEntry(h.Now(), g, store.AuditRefused, reason), e)
	}
	switch res {
	case passwords.PINValid:
		return gen, nil
	case passwords.PINInvalid:
		return 0, refuse("wrong PIN or OTP", pinInvalid(withOTP))
	case passwords.PINChanged:
		return 0, refuse(whyPINChanged, pinInvalid(withOTP))
	case passwords.PINLocked:
		return 0, refuse("PIN locked", protocol.BadRequest(descPINLocked))
	case passwords.PINUnusable:
		return 0, refuse("no usable PIN", protocol.BadRequest(descPINUnusable))
	default: // passwords.PINBusy: nothing was evaluated or counted
		return 0, protocol.Unavailable(protocol.RetryLater())
	}
}

// whyPINChanged is the audit reason of an authorization whose PIN was
// replaced, or the user's grants revoked, while the PIN was checked: the
// PIN sent is not the one stored now.
const whyPINChanged = "PIN changed meanwhile"

// pinInvalid is the answer to a wrong PIN (or PIN and OTP, withOTP), and
// to a PIN that was replaced while it was checked.
func pinInvalid(withOTP bool) *oauth.Error {
	desc := descPINInvalid
	if withOTP {
		desc = descPINOTPInvalid
	}
	return &oauth.Error{Code: codeInvalidPIN, Description: desc, Status: http.StatusBadRequest}
}

// issueSAD writes the SAD of an authorize request whose PIN was right
// against the user's secret generation gen. The world may have changed
// while the PIN was hashed: the credential, the user, the PIN lock and
// the generation (a PIN reset) are checked again where the SAD is
// written, and the SAD carries the generation.
func (h *Handler) issueSAD(ctx context.Context, g *oauth.Grant, req authorizeRequest, gen uint64) (sadResponse, error) {
	res, e, _, err := h.writeSAD(ctx, func(tx protocol.Tx, value string, now time.Time) (time.Time, *oauth.Error, string, error) {
		e, why, err := h.recheckAuthorize(tx, g, req, gen)
		if err != nil {
			return time.Time{}, e, why, err
		}
		if e != nil {
			return time.Time{}, e, why, tx.AppendAudit(req.auditEntry(h.Now(), g, store.AuditRefused, why))
		}
		expires := now.Add(h.sadTTL())
		if err := tx.CreateToken(&store.Token{
			Hash: store.Fingerprint(value), Kind: store.TokenSAD, ClientID: g.ClientID, Username: g.Username,
			Scopes: []string{protocol.ScopeCredential}, CredentialID: req.credentialID, Hashes: req.hashes,
			AuthTime: now, RequestedAt: now, ExpiresAt: expires, SecretGeneration: gen,
		}); err != nil {
			return time.Time{}, nil, "", err
		}
		return expires, nil, "", tx.AppendAudit(req.auditEntry(h.Now(), g, store.AuditGranted, ""))
	})
	if err != nil {
		return sadResponse{}, err
	}
	if e != nil {
		return sadResponse{}, e
	}
	h.Logger.InfoContext(ctx, "csc: SAD issued by credentials/authorize", "user", g.Username, "client", g.ClientID,
		"credential", req.credentialID, "signatures", len(req.hashes))
	return res, nil
}

// writeSAD mints a SAD value and runs write with it in one store batch
// that the request's cancellation does not stop. write stores the SAD and
// audits, answering when the SAD expires, or audits a refusal e and
// answers it with its reason why; writeSAD returns the refusal and its
// reason when the batch committed.
func (h *Handler) writeSAD(ctx context.Context, write func(tx protocol.Tx, value string, now time.Time) (time.Time, *oauth.Error, string, error)) (sadResponse, *oauth.Error, string, error) {
	value, err := newSAD()
	if err != nil {
		return sadResponse{}, nil, "", err
	}
	now := h.Now()
	var expires time.Time
	var e *oauth.Error
	var why string
	err = h.Store.Batch(context.WithoutCancel(ctx), func(tx protocol.Tx) error {
		var err error
		expires, e, why, err = write(tx, value, now)
		return err
	})
	if err != nil || e != nil {
		return sadResponse{}, e, why, err
	}
	return sadResponse{SAD: value, ExpiresIn: int64(expires.Sub(now) / time.Second)}, nil, "", nil
}

// recheckAuthorize runs in issueSAD's transaction: the credential and the
// user as explicitCredential checks them, the PIN not locked meanwhile
// nor replaced (the user's secret generation still gen, the one the PIN
// was checked against), the client still registered. It returns the
// refusal and its audit reason, or an error of the store.
func (h *Handler) recheckAuthorize(tx protocol.Tx, g *oauth.Grant, req authorizeRequest, gen uint64) (*oauth.Error, string, error) {
	u, e, why, err := h.explicitCredential(tx, g.Username, req.credentialID, len(req.hashes))
	switch {
	case err != nil:
		return nil, "", err
	case e != nil:
		return e, why, nil
	case u.PINLocked:
		return protocol.BadRequest(descPINLocked), "PIN locked meanwhile", nil
	case u.SecretGeneration != gen:
		return pinInvalid(u.TOTPSecret != ""), whyPINChanged, nil
	}
	if _, err := tx.Client(g.ClientID); errors.Is(err, store.ErrNotFound) {
		return protocol.Invalid("credentialID"), "client removed", nil
	} else if err != nil {
		return nil, "", err
	}
	return nil, "", nil
}

// auditEntry is the audit entry of this request at now: a grant lists the
// hashes, a refusal counts them.
func (req *authorizeRequest) auditEntry(now time.Time, g *oauth.Grant, outcome, reason string) *store.AuditEntry {
	a := &store.AuditEntry{Time: now, Kind: store.AuditAuthorize, User: g.Username, Client: g.ClientID,
		Credential: protocol.AuditCredential(req.credentialID), Outcome: outcome, Reason: reason}
	if outcome == store.AuditGranted {
		a.Hashes = protocol.HexHashes(req.hashes)
	} else {
		a.HashCount = len(req.hashes)
	}
	return a
}

// observeAuthorize reports the result of an authorize or
// extendTransaction request, judged by the error it returns (*errp).
func (h *Handler) observeAuthorize(method string, errp *error) {
	if h.Metrics == nil {
		return
	}
	result := "granted"
	var oe *oauth.Error
	switch err := *errp; {
	case err == nil:
	case !errors.As(err, &oe) || oe.Status >= http.StatusInternalServerError:
		result = "error"
	case oe.Code == codeInvalidPIN:
		result = "wrong_pin"
	case oe.Description == descPINLocked:
		result = "locked"
	default:
		result = "refused"
	}
	h.Metrics.ObserveAuthorize(method, result)
}

// refuseAuthorize records a refused authorization and returns its error.
func (h *Handler) refuseAuthorize(ctx context.Context, entry *store.AuditEntry, e *oauth.Error) error {
	err := h.Store.Batch(context.WithoutCancel(ctx), func(tx protocol.Tx) error { return tx.AppendAudit(entry) })
	if err != nil {
		return err
	}
	h.Logger.InfoContext(ctx, "csc: authorization refused", "user", entry.User, "client", entry.Client,
		"credential", entry.Credential, "reason", entry.Reason)
	return e
}

// newSAD returns a fresh SAD value: 32 random bytes, base64url.
func newSAD() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("csc: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func (h *Handler) sadTTL() time.Duration {
	if h.SADTTL > 0 {
		return h.SADTTL
	}
	return DefaultSADTTL
}

// extendRequest is a parsed credentials/extendTransaction request.
type extendRequest struct {
	credentialID string
	sad          string
	hashes       [][]byte
}

// parseExtend checks the parameters of extendTransaction in a fixed order,
// at most MaxHashes hashes.
func (h *Handler) parseExtend(p protocol.Params) (req extendRequest, e *oauth.Error) {
	if req.credentialID, _, e = p.Str("credentialID", true); e != nil {
		return req, e
	}
	if req.sad, _, e = p.Str("SAD", true); e != nil {
		return req, e
	}
	if req.hashes, _, e = protocol.HashArray(p, h.MaxHashes); e != nil {
		return req, e
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return req, protocol.Invalid("clientData")
	}
	return req, nil
}

// extendTransaction is POST /csc/v1/credentials/extendTransaction (CSC v1
// §11.7).
func (h *Handler) extendTransaction(c echo.Context) (err error) {
	defer h.observeAuthorize("extendTransaction", &err)
	return protocol.JSONMethod(h.parseExtend, h.extendSAD)(c)
}

// extendSAD trades the request's SAD for a new one (extend) and audits
// the outcome, in one transaction.
func (h *Handler) extendSAD(ctx context.Context, g *oauth.Grant, req extendRequest) (sadResponse, error) {
	res, e, why, err := h.writeSAD(ctx, func(tx protocol.Tx, value string, now time.Time) (time.Time, *oauth.Error, string, error) {
		e, why, expires, err := h.extend(tx, g, req.credentialID, req.sad, req.hashes, value, now)
		if err != nil {
			return expires, e, why, err
		}
		entry := &store.AuditEntry{Time: now, Kind: store.AuditAuthorize, User: g.Username, Client: g.ClientID,
			Credential: protocol.AuditCredential(req.credentialID), Outcome: store.AuditGranted, Reason: auditReasonExtended}
		if e != nil {
			entry.Outcome, entry.Reason, entry.HashCount = store.AuditRefused, auditReasonExtended+": "+why, len(req.hashes)
		} else {
			entry.Hashes = protocol.HexHashes(req.hashes)
		}
		return expires, e, why, tx.AppendAudit(entry)
	})
	if err != nil {
		return sadResponse{}, err
	}
	if e != nil {
		h.Logger.InfoContext(ctx, "csc: extendTransaction refused", "user", g.Username, "client", g.ClientID,
			"credential", protocol.AuditCredential(req.credentialID), "reason", why)
		return sadResponse{}, e
	}
	return res, nil
}

// extend runs in extendTransaction's write transaction. Checks that fail
// before the SAD is found leave it alone; a SAD presented for another
// user, client, credential or other hashes, or expired, is burned (as
// signHash does); the extension limit leaves it usable until it expires.
func (h *Handler) extend(tx protocol.Tx, g *oauth.Grant, id, sadValue string, hashes [][]byte, value string, now time.Time) (*oauth.Error, string, time.Time, error) {
	cred, e, why, err := h.Certs.Credential(tx, id, g.Username, now)
	if e != nil || err != nil {
		return e, why, time.Time{}, err
	}
	if cred.Multisign < 2 {
		return protocol.BadRequest(descNoExtension), "multisign 1", time.Time{}, nil
	}
	fp := store.Fingerprint(sadValue)
	sad, err := tx.Token(fp)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return protocol.Invalid("SAD"), "unknown SAD", time.Time{}, nil
	case err != nil:
		return nil, "", time.Time{}, err
	case sad.Kind != store.TokenSAD:
		return protocol.Invalid("SAD"), "access token presented as SAD", time.Time{}, nil
	}
	limit := sad.AuthTime.Add(maxSADExtensions * h.sadTTL())
	expires := now.Add(h.sadTTL())
	if limit.Before(expires) {
		expires = limit
	}
	burned := ""
	switch {
	case sad.Username != g.Username:
		burned = "SAD of another user (burned)"
	case sad.ClientID != g.ClientID:
		burned = "SAD of another client (burned)"
	case sad.CredentialID != cred.ID:
		burned = "SAD for another credential (burned)"
	case !now.Before(sad.ExpiresAt):
		if err := tx.DeleteToken(fp); err != nil {
			return nil, "", time.Time{}, err
		}
		return protocol.BadRequest(protocol.DescSADExpired), "SAD expired (burned)", time.Time{}, nil
	case !protocol.SameHashes(sad.Hashes, hashes):
		burned = "hashes differ from the SAD's (burned)"
	case !expires.After(sad.ExpiresAt):
		return protocol.BadRequest(descExtensionLimit), "extension limit reached", time.Time{}, nil
	}
	if err := tx.DeleteToken(fp); err != nil {
		return nil, "", time.Time{}, err
	}
	if burned != "" {
		e := protocol.Invalid("SAD")
		if burned == "hashes differ from the SAD's (burned)" {
			e = protocol.BadRequest(protocol.DescHashNotAuth)
		}
		return e, burned, time.Time{}, nil
	}
	if why, err := protocol.RevokedSAD(tx, sad); err != nil || why != "" {
		return protocol.Invalid("SAD"), why, time.Time{}, err
	}
	next := *sad
	next.Hash, next.ExpiresAt, next.CreatedAt = store.Fingerprint(value), expires, time.Time{}
	if err := tx.CreateToken(&next); err != nil {
		return nil, "", time.Time{}, err
	}
	return nil, "", expires, nil
}

// sendOTP is POST /csc/v1/credentials/sendOTP (CSC v1 §11.8). signd has no
// online OTP (the second factor is an authenticator app, OTP type
// offline), so every credential the user can see gets the same refusal.
func (h *Handler) sendOTP(c echo.Context) error {
	g, id, e := protocol.ParseRequest(c, parseSendOTP)
	if e != nil {
		return e
	}
	var cred *store.Credential
	err := h.Store.View(c.Request().Context(), func(tx protocol.Tx) (err error) {
		cred, err = tx.Credential(id)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return protocol.Invalid("credentialID")
	case err != nil:
		return err
	case !protocol.UsableBy(cred, g.Username):
		return protocol.Invalid("credentialID")
	}
	return protocol.BadRequest(descNoOnlineOTP)
}

// parseSendOTP checks the parameters of credentials/sendOTP: its
// credentialID.
func parseSendOTP(p protocol.Params) (id string, e *oauth.Error) {
	if id, _, e = p.Str("credentialID", true); e != nil {
		return "", e
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return "", protocol.Invalid("clientData")
	}
	return id, nil
}

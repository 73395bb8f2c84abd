package admin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// The admin operations of the OpenID Connect provider: proof
// documents, the sector check of OIDC clients and the signing keys.

// checkSector refuses an OIDC client whose pairwise sector cannot be
// derived: redirect URIs on several hosts (or private-use schemes) and no
// sector identifier.
func checkSector(c *store.Client) error {
	if !slices.Contains(c.Scopes, oidc.ScopeOpenID) || len(c.RedirectURIs) == 0 {
		return nil // not OIDC, or the store refuses it anyway
	}
	if _, err := oidc.Sector(c); err != nil {
		return errorf(KindInvalid, "client %q: its redirect URIs do not share one host, so pairwise subjects need --sector-identifier (for example the host name of the relying party)", c.ID)
	}
	return nil
}

// proofTypes are the content types of proof documents.
var proofTypes = []string{store.ProofJPEG, store.ProofPNG, store.ProofPDF}

// AddProof implements Service: the declared content type must be one of
// proofTypes and match the content's first bytes (http.DetectContentType,
// the WHATWG sniffing algorithm); the store limits the size to 10 MiB.
func (l *Local) AddProof(ctx context.Context, by Principal, req AddProofRequest) (_ *UserView, err error) {
	a, err := l.begin(ctx, by, "AddProof", store.AuditUserProofAdded, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.user = req.Username
	a.set("proof_id", req.ID)
	a.set("content_type", req.ContentType)
	a.set("size", strconv.Itoa(len(req.Content)))
	if !slices.Contains(proofTypes, req.ContentType) {
		return nil, errorf(KindInvalid, "content type %q is not accepted (%s)", req.ContentType, strings.Join(proofTypes, ", "))
	}
	switch {
	case len(req.Content) == 0:
		return nil, errorf(KindInvalid, "proof %q is empty", req.ID)
	case len(req.Content) > store.MaxProofSize:
		return nil, errorf(KindInvalid, "proof %q is larger than %d bytes", req.ID, store.MaxProofSize)
	}
	if got, _, _ := strings.Cut(http.DetectContentType(req.Content), ";"); got != req.ContentType {
		return nil, errorf(KindInvalid, "proof %q: the file is %s, not %s", req.ID, got, req.ContentType)
	}
	var u *store.User
	err = a.update(ctx, func(tx store.Tx) (err error) {
		p := store.Proof{ProofRef: store.ProofRef{ID: req.ID, ContentType: req.ContentType}, Content: req.Content}
		if err := tx.PutProof(req.Username, p); err != nil {
			return err
		}
		u, err = tx.User(req.Username)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", req.Username), err)
	}
	return l.userView(u), nil
}

func (l *Local) oidcKeys() (*oidc.KeyRing, error) {
	if l.OIDCKeys == nil {
		return nil, errorf(KindUnavailable, "the OIDC signing keys are not available in this process")
	}
	return l.OIDCKeys, nil
}

// failKeys maps the key life-cycle errors to conflicts with a hint.
func (l *Local) failKeys(op string, err error) error {
	switch {
	case errors.Is(err, oidc.ErrUnknownAlgorithm):
		return errorf(KindInvalid, "%v", err)
	case errors.As(err, new(*oidc.UnsupportedAlgorithmError)):
		return errorf(KindInvalid, "%v", err)
	case errors.Is(err, oidc.ErrNextKeyExists):
		return errorf(KindConflict, "%v: rotate to it first (`signd oidc keys rotate`)", err)
	case errors.Is(err, oidc.ErrNoNextKey):
		return errorf(KindConflict, "%v: publish one with `signd oidc keys create`, and rotate once relying parties have fetched the JWKS", err)
	case errors.Is(err, oidc.ErrNextKeyTooNew):
		return errorf(KindConflict, "%v (relying parties cache the JWKS; --force rotates now)", err)
	}
	return l.fail(op, err)
}

func (l *Local) oidcKeyView(r *oidc.KeyRing, k *store.SigningKey) *OIDCKeyView {
	v := &OIDCKeyView{
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

// CreateOIDCKey implements Service: a new key pair of req.Alg in the HSM,
// published as the next signing key of that algorithm (active at once when
// no key of it is active yet).
//
// The key ring writes the key in its own transaction: the audit entry
// follows it in another (act.end).
func (l *Local) CreateOIDCKey(ctx context.Context, by Principal, req CreateOIDCKeyRequest) (_ *OIDCKeyView, err error) {
	a, err := l.begin(ctx, by, "CreateOIDCKey", store.AuditOIDCKeyCreated, "oidc-keys")
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "CreateOIDCKey", req); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.outside = true
	if req.Alg != "" {
		a.set("alg", req.Alg)
	}
	r, err := l.oidcKeys()
	if err != nil {
		return nil, err
	}
	k, err := r.Create(ctx, req.Alg)
	if err != nil {
		return nil, l.failKeys("create OIDC signing key", err)
	}
	a.target = "oidc-key:" + k.KID
	a.set("alg", k.Algorithm)
	a.result["state"] = string(k.State)
	a.result["label"] = k.Label
	a.result["key_id"] = hex.EncodeToString(k.KeyID)
	return l.oidcKeyView(r, k), nil
}

// ListOIDCKeys implements Service, oldest key first.
func (l *Local) ListOIDCKeys(ctx context.Context, by Principal) (_ []OIDCKeyView, err error) {
	a, err := l.read(ctx, by, "ListOIDCKeys", "oidc-keys", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	r, err := l.oidcKeys()
	if err != nil {
		return nil, err
	}
	ks, err := r.Keys(ctx)
	if err != nil {
		return nil, l.fail("list OIDC signing keys", err)
	}
	out := make([]OIDCKeyView, 0, len(ks))
	for i := range ks {
		out = append(out, *l.oidcKeyView(r, &ks[i]))
	}
	return out, nil
}

// RotateOIDCKeys implements Service: the next key signs from now on, the
// active one is retired (published until its ID tokens expired), expired
// retired keys are removed from the JWKS and the HSM.
//
// As CreateOIDCKey, the audit entry follows the key ring's transactions.
// A rotation whose purge of expired keys failed is done: its entry says
// so (purge_error) and the purge is tried again at the next rotation.
func (l *Local) RotateOIDCKeys(ctx context.Context, by Principal, req RotateOIDCKeysRequest) (_ *RotateOIDCKeysResult, err error) {
	a, err := l.begin(ctx, by, "RotateOIDCKeys", store.AuditOIDCKeysRotated, "oidc-keys")
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "RotateOIDCKeys", req); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.outside = true
	if req.Alg != "" {
		a.set("alg", req.Alg)
	}
	a.set("force", strconv.FormatBool(req.Force))
	r, err := l.oidcKeys()
	if err != nil {
		return nil, err
	}
	rot, err := r.Rotate(ctx, req.Alg, req.Force)
	if err != nil && rot == nil {
		return nil, l.failKeys("rotate OIDC signing keys", err)
	}
	if err != nil {
		l.logger().Warn("purging expired OIDC signing keys failed", "err", err)
		a.result["purge_error"] = l.fail("purge OIDC signing keys", err).Error()
		err = nil
	}
	res := &RotateOIDCKeysResult{Active: *l.oidcKeyView(r, &rot.Active), Purged: rot.Purged}
	a.target = "oidc-key:" + rot.Active.KID
	a.set("alg", rot.Active.Algorithm)
	a.result["active"] = rot.Active.KID
	if rot.Retired != nil {
		res.Retired = l.oidcKeyView(r, rot.Retired)
		a.result["retired"] = rot.Retired.KID
	}
	if len(rot.Purged) > 0 {
		a.result["purged"] = strings.Join(rot.Purged, " ")
	}
	return res, nil
}

// checkIDTokenAlg checks a client's id_token_signed_response_alg and makes
// sure the provider can sign with it: the algorithm must be one of
// RS256, PS256 and ES256, spelt exactly (never none or an HMAC
// algorithm), the client must have scope openid, and a key of it must be
// active — the first key of an algorithm is generated now, active at once
// (no relying party can hold an ID token of it yet). A token that cannot
// make the key refuses the client with the mechanism it lacks.
func (l *Local) checkIDTokenAlg(ctx context.Context, c *store.Client) error {
	alg := c.IDTokenSignedResponseAlg
	if alg == "" {
		return nil
	}
	if !store.ValidJWSAlgorithm(alg) {
		return errorf(KindInvalid, "client %q: ID-token algorithm %.20q is not one signd signs with (%s; case-sensitive)", c.ID, alg, strings.Join(store.JWSAlgorithms(), ", "))
	}
	if !slices.Contains(c.Scopes, oidc.ScopeOpenID) {
		return errorf(KindInvalid, "client %q: an ID-token algorithm needs scope openid", c.ID)
	}
	r, err := l.oidcKeys()
	if err != nil {
		return err
	}
	if _, err := r.EnsureAlg(ctx, alg); err != nil {
		if u := (*oidc.UnsupportedAlgorithmError)(nil); errors.As(err, &u) {
			return errorf(KindInvalid, "client %q: id_token_signed_response_alg %v", c.ID, u)
		}
		return l.fail(fmt.Sprintf("%s signing key for client %q", alg, c.ID), err)
	}
	return nil
}

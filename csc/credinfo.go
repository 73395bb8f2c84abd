package csc

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/csc/signhash"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

const generalizedLayout = "20060102150405Z"

type credentialInfoResponse struct {
	Description string   `json:"description"`
	Key         keyInfo  `json:"key"`
	Cert        certInfo `json:"cert"`
	AuthMode    string   `json:"authMode"`
	SCAL        string   `json:"SCAL"`
	Multisign   int      `json:"multisign"`
	PIN         *pinInfo `json:"PIN,omitempty"`
	OTP         *otpInfo `json:"OTP,omitempty"`
	Lang        string   `json:"lang,omitempty"`
}

// pinInfo and otpInfo are credentials/info's PIN and OTP (CSC v1 §11.5),
// given with authInfo for explicit credentials only.
type pinInfo struct {
	Presence    string `json:"presence"`
	Format      string `json:"format"`
	Label       string `json:"label"`
	Description string `json:"description"`
}

type otpInfo struct {
	Presence    string `json:"presence"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Label       string `json:"label"`
	Description string `json:"description"`
	ID          string `json:"ID"`
	Provider    string `json:"provider"`
}

type keyInfo struct {
	Status string   `json:"status"`
	Algo   []string `json:"algo"`
	Len    int      `json:"len"`
	Curve  string   `json:"curve,omitempty"` // EC keys: the named curve's OID
}

type certInfo struct {
	Status       string   `json:"status"`
	Certificates []string `json:"certificates,omitempty"`
	IssuerDN     string   `json:"issuerDN,omitempty"`
	SerialNumber string   `json:"serialNumber,omitempty"`
	SubjectDN    string   `json:"subjectDN,omitempty"`
	ValidFrom    string   `json:"validFrom,omitempty"`
	ValidTo      string   `json:"validTo,omitempty"`
}

// credentialInfoRequest is a parsed credentials/info request.
type credentialInfoRequest struct {
	credentialID string
	certificates string // "none", "single" (the default) or "chain"
	// certInfo and authInfo ask for the certificate's details and for
	// the PIN and OTP of an explicit credential.
	certInfo, authInfo bool
}

// parseCredentialInfo checks the parameters of credentials/info in a
// fixed order.
func parseCredentialInfo(p protocol.Params) (req credentialInfoRequest, e *oauth.Error) {
	if req.credentialID, _, e = p.Str("credentialID", true); e != nil {
		return req, e
	}
	req.certificates = "single"
	if p.Has("certificates") {
		if req.certificates, _, e = p.Str("certificates", true); e != nil {
			return req, e
		}
		if c := req.certificates; c != "none" && c != "single" && c != "chain" {
			return req, protocol.Invalid("certificates")
		}
	}
	if req.certInfo, e = p.Bool("certInfo", false); e != nil {
		return req, e
	}
	if req.authInfo, e = p.Bool("authInfo", false); e != nil {
		return req, e
	}
	if _, _, e := p.Str("lang", false); e != nil {
		return req, e
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return req, protocol.Invalid("clientData")
	}
	return req, nil
}

// credentialInfo is POST /csc/v1/credentials/info.
func (h *Handler) credentialInfo(c echo.Context) error {
	return protocol.JSONMethod(parseCredentialInfo, h.describeCredential)(c)
}

// describeCredential answers credentials/info: the credential (the user's
// too, for the OTP of an explicit credential's authInfo) read in one view,
// then described.
func (h *Handler) describeCredential(ctx context.Context, g *oauth.Grant, req credentialInfoRequest) (*credentialInfoResponse, error) {
	var cred *store.Credential
	withOTP := false
	err := h.Store.View(ctx, func(tx protocol.Tx) (err error) {
		if cred, err = tx.Credential(req.credentialID); err != nil || !req.authInfo || cred.AuthMode != store.AuthExplicit || cred.Owner != g.Username {
			return err
		}
		u, err := tx.User(g.Username)
		if err == nil {
			withOTP = u.TOTPSecret != ""
		}
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, protocol.Invalid("credentialID")
	case err != nil:
		return nil, err
	case !protocol.UsableBy(cred, g.Username):
		return nil, protocol.Invalid("credentialID") // the same answer as an unknown ID
	}
	leaf, err := h.certs.Leaf(cred)
	if err != nil {
		return nil, err
	}
	now := h.now()
	res := &credentialInfoResponse{
		Description: cred.Description,
		Key:         h.keyInfo(cred, leaf, now),
		Cert:        h.certInfo(cred, leaf, req, now),
		AuthMode:    string(cred.AuthMode),
		SCAL:        "2",
		Multisign:   cred.Multisign,
		Lang:        h.Info.Lang,
	}
	if req.authInfo && cred.AuthMode == store.AuthExplicit {
		res.PIN = &pinInfo{Presence: "true", Format: "A", Label: "PIN", Description: "Your signing PIN"}
		if withOTP {
			res.OTP = &otpInfo{Presence: "true", Type: "offline", Format: "N", Label: "OTP",
				Description: "The code of your authenticator app", ID: "totp", Provider: "totp"}
		}
	}
	if res.Description == "" {
		res.Description = strings.ToUpper(cred.Algorithm) + " signing key"
	}
	return res, nil
}

// keyInfo is credentials/info's key at now: disabled when an admin
// disabled it or its certificate is not valid now, revoked, suspended or
// of unknown status; no RSASSA-PSS when the Signer cannot make it.
func (h *Handler) keyInfo(cred *store.Credential, leaf *x509.Certificate, now time.Time) keyInfo {
	algos, curve := signhash.KeyAlgoInfo(cred.Algorithm)
	if p, ok := h.Signer.(PSSReporter); ok && !p.SignsPSS() {
		algos = slices.DeleteFunc(algos, func(oid string) bool { return oid == signhash.OIDRSASSAPSS })
	}
	k := keyInfo{Status: "enabled", Algo: algos, Len: cred.KeyBits, Curve: curve}
	if cred.Status != store.CredentialEnabled || protocol.CertRefusal(leaf, now) != "" ||
		protocol.Revoked(h.Revocation, cred.Chain, leaf) {
		k.Status = "disabled"
	}
	return k
}

// certInfo is credentials/info's cert at now, with the certificates and
// details req asked for.
func (h *Handler) certInfo(cred *store.Credential, leaf *x509.Certificate, req credentialInfoRequest, now time.Time) certInfo {
	c := certInfo{Status: "valid"}
	if h.Revocation != nil {
		// The last known answer, also while it is not current (then the
		// key is disabled, keyInfo).
		if s, _ := h.Revocation.Status(cred.Chain); s != certstatus.Valid {
			c.Status = string(s)
		}
	}
	if now.After(leaf.NotAfter) {
		c.Status = "expired"
	}
	switch req.certificates {
	case "single":
		c.Certificates = []string{base64.StdEncoding.EncodeToString(cred.Chain[0])}
	case "chain":
		for _, der := range cred.Chain {
			c.Certificates = append(c.Certificates, base64.StdEncoding.EncodeToString(der))
		}
	}
	if req.certInfo {
		c.IssuerDN = leaf.Issuer.String()
		c.SubjectDN = leaf.Subject.String()
		c.SerialNumber = fmt.Sprintf("%X", leaf.SerialNumber.Bytes())
		c.ValidFrom = leaf.NotBefore.UTC().Format(generalizedLayout)
		c.ValidTo = leaf.NotAfter.UTC().Format(generalizedLayout)
	}
	return c
}

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
func parseCredentialInfo(p params) (req credentialInfoRequest, e *oauth.Error) {
	if req.credentialID, _, e = p.str("credentialID", true); e != nil {
		return req, e
	}
	req.certificates = "single"
	if p.has("certificates") {
		if req.certificates, _, e = p.str("certificates", true); e != nil {
			return req, e
		}
		if c := req.certificates; c != "none" && c != "single" && c != "chain" {
			return req, invalid("certificates")
		}
	}
	if req.certInfo, e = p.boolean("certInfo", false); e != nil {
		return req, e
	}
	if req.authInfo, e = p.boolean("authInfo", false); e != nil {
		return req, e
	}
	if _, _, e := p.str("lang", false); e != nil {
		return req, e
	}
	if _, _, e := p.str("clientData", false); e != nil {
		return req, invalid("clientData")
	}
	return req, nil
}

// credentialInfo is POST /csc/v1/credentials/info.
func (h *Handler) credentialInfo(c echo.Context) error {
	return jsonMethod(parseCredentialInfo, h.describeCredential)(c)
}

// describeCredential answers credentials/info: the credential (the user's
// too, for the OTP of an explicit credential's authInfo) read in one view,
// then described.
func (h *Handler) describeCredential(ctx context.Context, g *oauth.Grant, req credentialInfoRequest) (*credentialInfoResponse, error) {
	var cred *store.Credential
	withOTP := false
	err := h.Store.View(ctx, func(tx Tx) (err error) {
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
		return nil, invalid("credentialID")
	case err != nil:
		return nil, err
	case !usableBy(cred, g.Username):
		return nil, invalid("credentialID") // the same answer as an unknown ID
	}
	leaf, err := h.leaves.parse(cred.Chain[0])
	if err != nil {
		return nil, fmt.Errorf("csc: credential %s: certificate: %w", cred.ID, err)
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
	algos, curve := keyAlgoInfo(cred.Algorithm)
	if p, ok := h.Signer.(PSSReporter); ok && !p.SignsPSS() {
		algos = slices.DeleteFunc(algos, func(oid string) bool { return oid == oidRSASSAPSS })
	}
	k := keyInfo{Status: "enabled", Algo: algos, Len: cred.KeyBits, Curve: curve}
	if cred.Status != store.CredentialEnabled || certRefusal(leaf, now) != "" ||
		revoked(h.Revocation, cred.Chain, leaf) {
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

// usableBy reports whether the CSC API shows cred to username: it must be
// theirs and have a certificate (pending credentials are not offered).
func usableBy(cred *store.Credential, username string) bool {
	return cred.Owner == username && cred.Status != store.CredentialPending && len(cred.Chain) > 0
}

// certRefusal returns the specification's refusal for signing with leaf at
// now, or "" while it is valid. Every refusal names the certificate by its
// subject DN in RFC 4514 form (pkix.Name.String), the very string
// credentials/info reports as subjectDN, rather than the specification's
// "O=…,CN=…" sketch.
func certRefusal(leaf *x509.Certificate, now time.Time) string {
	switch {
	case now.After(leaf.NotAfter):
		return "Signing certificate '" + leaf.Subject.String() + "' is expired."
	case now.Before(leaf.NotBefore):
		return "Signing certificate '" + leaf.Subject.String() + "' is not yet valid."
	}
	return ""
}

func revoked(rev Revocation, chain [][]byte, leaf *x509.Certificate) bool {
	msg, _ := revocationRefusal(rev, chain, leaf)
	return msg != ""
}

// revocationRefusal returns the refusal for signing with chain while rev
// reports it revoked, suspended or without a current answer (hard fail,
// see package certstatus), or "" (also when rev is nil).
// The second result is the audit reason.
func revocationRefusal(rev Revocation, chain [][]byte, leaf *x509.Certificate) (string, string) {
	if rev == nil {
		return "", ""
	}
	status, current := rev.Status(chain)
	switch {
	case status == certstatus.Revoked:
		return "Signing certificate '" + leaf.Subject.String() + "' is revoked.", "certificate revoked"
	case status == certstatus.Suspended:
		return "Signing certificate '" + leaf.Subject.String() + "' is suspended.", "certificate suspended"
	case !current:
		return "The revocation status of signing certificate '" + leaf.Subject.String() + "' could not be verified.",
			"certificate status unknown (no current OCSP or CRL answer)"
	}
	return "", ""
}

package csc

import (
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
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

// credentialInfo is POST /csc/v1/credentials/info.
func (h *Handler) credentialInfo(c echo.Context) error {
	g := oauth.GrantFrom(c)
	p, e := readParams(c.Request())
	if e != nil {
		return e
	}
	id, _, e := p.str("credentialID", true)
	if e != nil {
		return e
	}
	certs := "single"
	if p.has("certificates") {
		if certs, _, e = p.str("certificates", true); e != nil {
			return e
		}
		if certs != "none" && certs != "single" && certs != "chain" {
			return invalid("certificates")
		}
	}
	withCertInfo, e := p.boolean("certInfo", false)
	if e != nil {
		return e
	}
	withAuthInfo, e := p.boolean("authInfo", false)
	if e != nil {
		return e
	}
	if _, _, e := p.str("lang", false); e != nil {
		return e
	}
	if _, _, e := p.str("clientData", false); e != nil {
		return invalid("clientData")
	}

	var cred *store.Credential
	withOTP := false
	err := h.Store.View(c.Request().Context(), func(tx Tx) (err error) {
		if cred, err = tx.Credential(id); err != nil || !withAuthInfo || cred.AuthMode != store.AuthExplicit || cred.Owner != g.Username {
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
		return invalid("credentialID")
	case err != nil:
		return err
	case !usableBy(cred, g.Username):
		return invalid("credentialID") // the same answer as an unknown ID
	}
	leaf, err := h.leaves.parse(cred.Chain[0])
	if err != nil {
		return fmt.Errorf("csc: credential %s: certificate: %w", cred.ID, err)
	}

	now := h.now()
	algos, curve := keyAlgoInfo(cred.Algorithm)
	if p, ok := h.Signer.(PSSReporter); ok && !p.SignsPSS() {
		algos = slices.DeleteFunc(algos, func(oid string) bool { return oid == oidRSASSAPSS })
	}
	res := credentialInfoResponse{
		Description: cred.Description,
		Key: keyInfo{
			Status: "enabled",
			Algo:   algos,
			Len:    cred.KeyBits,
			Curve:  curve,
		},
		Cert:      certInfo{Status: "valid"},
		AuthMode:  string(cred.AuthMode),
		SCAL:      "2",
		Multisign: cred.Multisign,
		Lang:      h.Info.Lang,
	}
	if withAuthInfo && cred.AuthMode == store.AuthExplicit {
		res.PIN = &pinInfo{Presence: "true", Format: "A", Label: "PIN", Description: "Your signing PIN"}
		if withOTP {
			res.OTP = &otpInfo{Presence: "true", Type: "offline", Format: "N", Label: "OTP",
				Description: "The code of your authenticator app", ID: "totp", Provider: "totp"}
		}
	}
	if res.Description == "" {
		res.Description = strings.ToUpper(cred.Algorithm) + " signing key"
	}
	if cred.Status != store.CredentialEnabled || certRefusal(leaf, now) != "" ||
		revoked(h.Revocation, cred.Chain, leaf) {
		res.Key.Status = "disabled"
	}
	if h.Revocation != nil {
		// The last known answer, also while it is not current (then the
		// key is disabled above).
		if s, _ := h.Revocation.Status(cred.Chain); s != certstatus.Valid {
			res.Cert.Status = string(s)
		}
	}
	if now.After(leaf.NotAfter) {
		res.Cert.Status = "expired"
	}
	switch certs {
	case "single":
		res.Cert.Certificates = []string{base64.StdEncoding.EncodeToString(cred.Chain[0])}
	case "chain":
		for _, der := range cred.Chain {
			res.Cert.Certificates = append(res.Cert.Certificates, base64.StdEncoding.EncodeToString(der))
		}
	}
	if withCertInfo {
		res.Cert.IssuerDN = leaf.Issuer.String()
		res.Cert.SubjectDN = leaf.Subject.String()
		res.Cert.SerialNumber = fmt.Sprintf("%X", leaf.SerialNumber.Bytes())
		res.Cert.ValidFrom = leaf.NotBefore.UTC().Format(generalizedLayout)
		res.Cert.ValidTo = leaf.NotAfter.UTC().Format(generalizedLayout)
	}
	return c.JSON(http.StatusOK, res)
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

package crlscope

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// CRL and CRL entry extensions (RFC 5280 §5.2, §5.3).
var (
	oidAuthorityKeyID = asn1.ObjectIdentifier{2, 5, 29, 35}
	oidCRLNumber      = asn1.ObjectIdentifier{2, 5, 29, 20}
	oidDeltaCRL       = asn1.ObjectIdentifier{2, 5, 29, 27}
	oidIssuingDP      = asn1.ObjectIdentifier{2, 5, 29, 28}
	oidReasonCode     = asn1.ObjectIdentifier{2, 5, 29, 21}
	oidInvalidityDate = asn1.ObjectIdentifier{2, 5, 29, 24}
)

// Skew is the clock difference tolerated between signd's clock and the
// thisUpdate of a CRL or an OCSP response: one issued on a CA whose clock
// runs up to Skew ahead is still taken. The signing path (csc/certstatus)
// and the provisioning API's client CRL (config/clientca) use this one
// value.
const Skew = 5 * time.Minute

// Future reports whether thisUpdate is in the future at now, beyond Skew:
// an answer from a wrong clock, which is refused.
func Future(thisUpdate, now time.Time) bool { return thisUpdate.After(now.Add(Skew)) }

// Read checks what makes crl a complete CRL for any certificate, and
// returns its scope: a delta CRL (deltaCRLIndicator, §5.2.4) is not
// usable alone and delta CRLs are not merged with their base; an
// issuingDistributionPoint (§5.2.5) must be well-formed and not narrow
// the CRL to some reasons or attribute certificates, make it indirect or
// name its distribution point relative to the CRL issuer; a critical
// extension of the CRL or of an entry that is not processed here makes
// the CRL unusable (§5.2, §5.3). An extension given twice is refused too.
// Scope.Covers then says whether the CRL counts for one certificate.
func Read(crl *x509.RevocationList) (Scope, error) {
	var s Scope
	if err := distinct(crl.Extensions); err != nil {
		return s, err
	}
	for _, ext := range crl.Extensions {
		switch {
		case ext.Id.Equal(oidDeltaCRL):
			return s, errors.New("a delta CRL (deltaCRLIndicator) is not a complete CRL; delta CRLs are not merged with their base")
		case ext.Id.Equal(oidIssuingDP):
			p, err := parseIDP(ext.Value)
			if err == nil {
				err = p.complete()
			}
			if err != nil {
				return s, fmt.Errorf("issuingDistributionPoint: %w", err)
			}
			s.p = p
		case ext.Id.Equal(oidAuthorityKeyID), ext.Id.Equal(oidCRLNumber):
			// Read by x509.ParseRevocationList.
		case ext.Critical:
			return s, fmt.Errorf("unknown critical CRL extension %s", ext.Id)
		}
	}
	for _, e := range crl.RevokedCertificateEntries {
		if err := distinct(e.Extensions); err != nil {
			return s, fmt.Errorf("entry %s: %w", e.SerialNumber, err)
		}
		for _, ext := range e.Extensions {
			// reasonCode is read by x509.ParseRevocationList and
			// invalidityDate changes nothing here; certificateIssuer
			// (always critical) belongs to indirect CRLs, which are
			// not used.
			if ext.Critical && !ext.Id.Equal(oidReasonCode) && !ext.Id.Equal(oidInvalidityDate) {
				return s, fmt.Errorf("entry %s: unsupported critical extension %s", e.SerialNumber, ext.Id)
			}
		}
	}
	return s, nil
}

// Covers says why crl, signed by cert's issuer, is not a complete CRL
// whose scope includes cert (RFC 5280 §6.3.3), or nil when it is: Read,
// then Scope.Covers.
func Covers(crl *x509.RevocationList, cert *x509.Certificate) error {
	s, err := Read(crl)
	if err != nil {
		return err
	}
	return s.Covers(cert)
}

// Scope is the scope a complete CRL gives itself (its
// issuingDistributionPoint; the zero Scope, every certificate of its
// issuer).
type Scope struct{ p idp }

// OnlyCA reports whether the CRL covers only CA certificates (an ARL).
func (s Scope) OnlyCA() bool { return s.p.onlyCA }

// Covers says why a CRL of this scope is not a complete CRL for cert
// (RFC 5280 §6.3.3 (b)(2)), or nil when it is.
func (s Scope) Covers(cert *x509.Certificate) error {
	if err := s.p.covers(cert); err != nil {
		return fmt.Errorf("issuingDistributionPoint: %w", err)
	}
	return nil
}

// distinct refuses an extension given twice (RFC 5280 §4.2, which §5.2
// and §5.3 follow): which of the two counts would be a guess.
func distinct(exts []pkix.Extension) error {
	if len(exts) < 2 {
		return nil
	}
	seen := make(map[string]bool, len(exts))
	for _, ext := range exts {
		id := ext.Id.String()
		if seen[id] {
			return fmt.Errorf("extension %s given twice", id)
		}
		seen[id] = true
	}
	return nil
}

// idp is an issuingDistributionPoint extension (RFC 5280 §5.2.5):
//
//	IssuingDistributionPoint ::= SEQUENCE {
//	     distributionPoint          [0] DistributionPointName OPTIONAL,
//	     onlyContainsUserCerts      [1] BOOLEAN DEFAULT FALSE,
//	     onlyContainsCACerts        [2] BOOLEAN DEFAULT FALSE,
//	     onlySomeReasons            [3] ReasonFlags OPTIONAL,
//	     indirectCRL                [4] BOOLEAN DEFAULT FALSE,
//	     onlyContainsAttributeCerts [5] BOOLEAN DEFAULT FALSE }
//	DistributionPointName ::= CHOICE {
//	     fullName                [0] GeneralNames,
//	     nameRelativeToCRLIssuer [1] RelativeDistinguishedName }
//
// (implicit tags; the CHOICE's tag is explicit).
type idp struct {
	// hasName: distributionPoint is present. uris are the
	// uniformResourceIdentifier names of its fullName (other kinds of
	// name are skipped); relative: it is a nameRelativeToCRLIssuer.
	hasName, relative bool
	uris              []string
	// reasons: onlySomeReasons is present.
	onlyUser, onlyCA, reasons, indirect, onlyAttr bool
}

// parseIDP reads the DER of an issuingDistributionPoint extension's
// value. It refuses anything but one well-formed SEQUENCE of the fields
// above, in order, with nothing after them: one with nothing but default
// values (empty, §5.2.5 forbids it), a distributionPoint with no name or with both alternatives,
// booleans other than DER's 0x00 and 0xFF, more than one onlyContains*
// asserted, a malformed BIT STRING, a URI that is not IA5 (ASCII).
func parseIDP(der []byte) (idp, error) {
	var p idp
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !in.Empty() {
		return p, errors.New("not one DER SEQUENCE")
	}
	var dp cryptobyte.String
	if !seq.ReadOptionalASN1(&dp, &p.hasName, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return p, errors.New("malformed distributionPoint")
	}
	if p.hasName {
		if err := p.readName(dp); err != nil {
			return p, err
		}
	}
	if err := readBool(&seq, 1, "onlyContainsUserCerts", &p.onlyUser); err != nil {
		return p, err
	}
	if err := readBool(&seq, 2, "onlyContainsCACerts", &p.onlyCA); err != nil {
		return p, err
	}
	var reasons cryptobyte.String
	if !seq.ReadOptionalASN1(&reasons, &p.reasons, cbasn1.Tag(3).ContextSpecific()) || p.reasons && !bitString(reasons) {
		return p, errors.New("malformed onlySomeReasons")
	}
	if err := readBool(&seq, 4, "indirectCRL", &p.indirect); err != nil {
		return p, err
	}
	if err := readBool(&seq, 5, "onlyContainsAttributeCerts", &p.onlyAttr); err != nil {
		return p, err
	}
	if !seq.Empty() {
		return p, errors.New("unknown or misplaced fields")
	}
	if n := btoi(p.onlyUser) + btoi(p.onlyCA) + btoi(p.onlyAttr); n > 1 {
		return p, errors.New("more than one of onlyContainsUserCerts, onlyContainsCACerts, onlyContainsAttributeCerts")
	}
	if !p.hasName && !p.reasons && !p.onlyUser && !p.onlyCA && !p.onlyAttr && !p.indirect {
		return p, errors.New("no field but defaults (RFC 5280 §5.2.5 forbids it)")
	}
	return p, nil
}

// readName reads the DistributionPointName CHOICE, which must fill dp.
func (p *idp) readName(dp cryptobyte.String) error {
	var names cryptobyte.String
	switch {
	case dp.PeekASN1Tag(cbasn1.Tag(0).Constructed().ContextSpecific()):
		if !dp.ReadASN1(&names, cbasn1.Tag(0).Constructed().ContextSpecific()) {
			return errors.New("malformed fullName")
		}
		if names.Empty() {
			return errors.New("fullName without a name")
		}
		for !names.Empty() {
			var name cryptobyte.String
			var tag cbasn1.Tag
			if !names.ReadAnyASN1(&name, &tag) {
				return errors.New("malformed GeneralName")
			}
			if tag != cbasn1.Tag(6).ContextSpecific() {
				continue
			}
			for _, b := range name {
				if b > 0x7f {
					return errors.New("a uniformResourceIdentifier that is not IA5String")
				}
			}
			p.uris = append(p.uris, string(name))
		}
	case dp.PeekASN1Tag(cbasn1.Tag(1).Constructed().ContextSpecific()):
		if !dp.ReadASN1(&names, cbasn1.Tag(1).Constructed().ContextSpecific()) {
			return errors.New("malformed nameRelativeToCRLIssuer")
		}
		p.relative = true
	default:
		return errors.New("distributionPoint is neither fullName nor nameRelativeToCRLIssuer")
	}
	if !dp.Empty() {
		return errors.New("data after the distributionPoint name")
	}
	return nil
}

// readBool reads the optional [tag] IMPLICIT BOOLEAN called name into v
// (absent: false, its DEFAULT).
func readBool(s *cryptobyte.String, tag uint8, name string, v *bool) error {
	var b cryptobyte.String
	var present bool
	switch {
	case !s.ReadOptionalASN1(&b, &present, cbasn1.Tag(tag).ContextSpecific()):
		return fmt.Errorf("malformed %s", name)
	case !present:
	case len(b) == 1 && (b[0] == 0 || b[0] == 0xff):
		*v = b[0] == 0xff
	default:
		return fmt.Errorf("%s is not a DER BOOLEAN", name)
	}
	return nil
}

// bitString reports whether v is the content of a DER BIT STRING: the
// count of unused bits (0–7, 0 when there are no bits), and those bits
// zero.
func bitString(v []byte) bool {
	if len(v) == 0 || v[0] > 7 || len(v) == 1 && v[0] != 0 {
		return false
	}
	return v[len(v)-1]&(1<<v[0]-1) == 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// complete says why a CRL with this issuingDistributionPoint is complete
// for no certificate this package checks, or nil.
func (p idp) complete() error {
	switch {
	case p.indirect:
		return errors.New("an indirect CRL (indirectCRL) is not used")
	case p.reasons:
		return errors.New("the CRL covers only some reasons (onlySomeReasons)")
	case p.onlyAttr:
		return errors.New("the CRL covers only attribute certificates")
	case p.relative:
		return errors.New("a distribution point named relative to the CRL issuer is not matched")
	}
	return nil
}

// covers says why a CRL with this issuingDistributionPoint is not a
// complete CRL for cert (RFC 5280 §6.3.3 (b)(2)), or nil when it is.
// Distribution point names are compared as bytes (a URI spelt otherwise
// does not match: the CRL then does not count, which fails closed).
func (p idp) covers(cert *x509.Certificate) error {
	isCA := cert.BasicConstraintsValid && cert.IsCA
	if err := p.complete(); err != nil {
		return err
	}
	switch {
	case p.onlyUser && isCA:
		return errors.New("the CRL covers only end-entity certificates")
	case p.onlyCA && !isCA:
		return errors.New("the CRL covers only CA certificates")
	case p.hasName && !slices.ContainsFunc(p.uris, func(u string) bool { return slices.Contains(cert.CRLDistributionPoints, u) }):
		return fmt.Errorf("the CRL is scoped to another distribution point (%q)", p.uris)
	}
	return nil
}

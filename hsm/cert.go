package hsm

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"fmt"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
)

// ImportCertificate stores cert on the token as a CKO_CERTIFICATE object
// (X.509, public, CKA_ID id) after checking that its public key is the HSM
// key with CKA_ID id (ErrCertKeyMismatch otherwise). A certificate already
// stored with that ID is replaced. label defaults to the key's label. The
// key must satisfy the key policy (see Token.Key).
func (t *Token) ImportCertificate(ctx context.Context, id []byte, label string, cert *x509.Certificate) error {
	if cert == nil {
		return fmt.Errorf("hsm: import certificate: nil certificate")
	}
	serial, err := asn1.Marshal(cert.SerialNumber)
	if err != nil {
		return fmt.Errorf("hsm: import certificate: serial number: %w", err)
	}
	t.genMu.Lock()
	defer t.genMu.Unlock()
	err = t.run(ctx, "import certificate", func(s pkcs11.SessionHandle) error {
		k, err := t.keyFor(s, id)
		if err != nil {
			return err
		}
		if !keyobj.PublicEqual(k.pub, cert.PublicKey) {
			return fmt.Errorf("%w: certificate %q, key %x", ErrCertKeyMismatch, cert.Subject, id)
		}
		lbl := label
		if lbl == "" {
			lbl = k.label
		}
		old, err := t.obj.FindAll(s, keyobj.CertTemplate(id))
		if err != nil {
			return err
		}
		// Create first, then destroy: a failure leaves the old one.
		if _, err := t.lib.CreateObject(s, certObject(cert, serial, id, lbl)); err != nil {
			return ckr.Wrap("C_CreateObject", err)
		}
		for _, h := range old {
			if err := t.lib.DestroyObject(s, h); err != nil {
				return ckr.Wrap("C_DestroyObject", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.log.InfoContext(ctx, "hsm: stored certificate", "token", t.label, "id", fmt.Sprintf("%x", id), "subject", cert.Subject.String(), "serial", cert.SerialNumber.String())
	return nil
}

// StoreCertificates replaces the X.509 certificates stored under label
// with CKA_ID id by certs: the issuers of the certificate of key id (its
// chain, which a revocation check needs), public and not checked against
// any key. The new objects are created first, then the old destroyed: a
// failure leaves the old ones (and maybe some new). ImportCertificate of
// key id destroys them too: store them after it.
func (t *Token) StoreCertificates(ctx context.Context, id []byte, label string, certs []*x509.Certificate) error {
	if len(id) == 0 || label == "" {
		return fmt.Errorf("hsm: store certificates: an ID and a label are required")
	}
	objs := make([][]*pkcs11.Attribute, len(certs))
	for i, cert := range certs {
		serial, err := asn1.Marshal(cert.SerialNumber)
		if err != nil {
			return fmt.Errorf("hsm: store certificates: serial number: %w", err)
		}
		objs[i] = certObject(cert, serial, id, label)
	}
	t.genMu.Lock()
	defer t.genMu.Unlock()
	return t.run(ctx, "store certificates", func(s pkcs11.SessionHandle) error {
		old, err := t.obj.FindAll(s, append(keyobj.CertTemplate(id), pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)))
		if err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := t.lib.CreateObject(s, o); err != nil {
				return ckr.Wrap("C_CreateObject", err)
			}
		}
		for _, h := range old {
			if err := t.lib.DestroyObject(s, h); err != nil {
				return ckr.Wrap("C_DestroyObject", err)
			}
		}
		return nil
	})
}

// certObject is the template of a public CKO_CERTIFICATE object for cert
// on the token.
func certObject(cert *x509.Certificate, serial, id []byte, label string) []*pkcs11.Attribute {
	return []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_CERTIFICATE),
		pkcs11.NewAttribute(pkcs11.CKA_CERTIFICATE_TYPE, pkcs11.CKC_X_509),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
		pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, false),
		pkcs11.NewAttribute(pkcs11.CKA_SUBJECT, cert.RawSubject),
		pkcs11.NewAttribute(pkcs11.CKA_ISSUER, cert.RawIssuer),
		pkcs11.NewAttribute(pkcs11.CKA_SERIAL_NUMBER, serial),
		pkcs11.NewAttribute(pkcs11.CKA_VALUE, cert.Raw),
		pkcs11.NewAttribute(pkcs11.CKA_ID, id),
		pkcs11.NewAttribute(pkcs11.CKA_LABEL, label),
	}
}

// Certificate is an X.509 certificate stored on the token and the CKA_ID
// it shares with its key pair.
type Certificate struct {
	ID   []byte
	Cert *x509.Certificate
}

// Certificates returns the X.509 certificates stored under label, every
// one (the token is read in pages: keyobj.Objects.Find), in token order. A
// stored value that does not parse is skipped, and logged once per value
// for the life of the Token: one bad object under the label does not hide
// the others.
func (t *Token) Certificates(ctx context.Context, label string) ([]Certificate, error) {
	var out []Certificate
	err := t.run(ctx, "find certificates", func(s pkcs11.SessionHandle) error {
		out = out[:0]
		hs, err := t.obj.FindAll(s, []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_CERTIFICATE),
			pkcs11.NewAttribute(pkcs11.CKA_CERTIFICATE_TYPE, pkcs11.CKC_X_509),
			pkcs11.NewAttribute(pkcs11.CKA_LABEL, label),
		})
		if err != nil {
			return err
		}
		for _, h := range hs {
			v, err := t.obj.Attrs(s, h, pkcs11.CKA_ID, pkcs11.CKA_VALUE)
			if err != nil {
				return err
			}
			c, err := x509.ParseCertificate(v[pkcs11.CKA_VALUE])
			if err != nil {
				t.badCertificate(ctx, label, v[pkcs11.CKA_ID], v[pkcs11.CKA_VALUE], err)
				continue
			}
			out = append(out, Certificate{ID: v[pkcs11.CKA_ID], Cert: c})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// badCertificate logs, the first time Certificates meets it, a stored
// certificate value that does not parse.
func (t *Token) badCertificate(ctx context.Context, label string, id, value []byte, err error) {
	if _, seen := t.badCerts.LoadOrStore(sha256.Sum256(value), true); seen {
		return
	}
	t.log.WarnContext(ctx, "hsm: a certificate object does not parse: skipped (remove it with pkcs11-tool)",
		"token", t.label, "label", label, "id", fmt.Sprintf("%x", id), "err", err)
}

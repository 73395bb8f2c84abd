package remote

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/digitorus/pdf"
	"github.com/digitorus/pdfsign/sign"
	"github.com/digitorus/timestamp"
)

// Signer is the credential's key for pdfsign: Sign authorizes the digest
// and has it signed by signatures/signHash. The signature is verified
// against the certificate before it is returned.
type Signer struct {
	Ctx    context.Context
	Client *Client
	Cert   *x509.Certificate
}

var _ crypto.Signer = (*Signer)(nil)

// Public returns the certificate's public key.
func (s *Signer) Public() crypto.PublicKey { return s.Cert.PublicKey }

// Sign signs a SHA-256 digest with RSA PKCS#1 v1.5 remotely.
func (s *Signer) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts == nil || opts.HashFunc() != crypto.SHA256 {
		return nil, errors.New("remote: only SHA-256 digests are signed")
	}
	if _, pss := opts.(*rsa.PSSOptions); pss {
		return nil, errors.New("remote: RSA-PSS is not asked of the service")
	}
	pub, ok := s.Cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, errors.New("remote: the credential's key is not RSA")
	}
	sad, err := s.Client.Authorize(s.Ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("authorize: %w", err)
	}
	sig, err := s.Client.SignHash(s.Ctx, sad, digest)
	if err != nil {
		return nil, err
	}
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest, sig); err != nil {
		return nil, fmt.Errorf("signatures/signHash: the signature does not verify with the certificate: %w", err)
	}
	return sig, nil
}

// Document describes the signature placed in the PDF.
type Document struct {
	Name, Reason, Location, ContactInfo string
	Date                                time.Time // zero = now
}

// Input is a PDF to sign: *os.File and *bytes.Reader are ones.
type Input interface {
	io.ReadSeeker
	io.ReaderAt
}

// Sign signs the PDF in (of size bytes) with the client's credential and
// writes the signed PDF to out: an approval signature (PAdES B-T) with the
// credential's chain and a signature time-stamp from the service.
func Sign(ctx context.Context, c *Client, in Input, size int64, out io.Writer, doc Document) error {
	chain, err := c.Chain(ctx)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("time-stamp bridge: %w", err)
	}
	srv := &http.Server{Handler: &tsaBridge{ctx: ctx, client: c}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	rdr, err := pdf.NewReader(in, size)
	if err != nil {
		return fmt.Errorf("read PDF: %w", err)
	}
	date := doc.Date
	if date.IsZero() {
		date = time.Now()
	}
	return sign.Sign(in, out, rdr, size, sign.SignData{
		Signature: sign.SignDataSignature{
			Info: sign.SignDataSignatureInfo{
				Name: doc.Name, Location: doc.Location, Reason: doc.Reason, ContactInfo: doc.ContactInfo, Date: date,
			},
			CertType:   sign.ApprovalSignature,
			DocMDPPerm: sign.AllowFillingExistingFormFieldsAndSignaturesPerms,
		},
		Signer:            &Signer{Ctx: ctx, Client: c, Cert: chain[0]},
		DigestAlgorithm:   crypto.SHA256,
		Certificate:       chain[0],
		CertificateChains: [][]*x509.Certificate{chain},
		TSA:               sign.TSA{URL: "http://" + ln.Addr().String() + "/tsa"},
	})
}

// maxQuery bounds an RFC 3161 request body.
const maxQuery = 16 << 10

// tsaBridge answers RFC 3161 HTTP queries (application/timestamp-query,
// RFC 3161 §3.4) with tokens from signatures/timestamp.
type tsaBridge struct {
	ctx    context.Context
	client *Client
}

func (b *tsaBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxQuery))
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	q, err := timestamp.ParseRequest(body)
	if err != nil {
		http.Error(w, "bad time-stamp query", http.StatusBadRequest)
		return
	}
	tok, err := b.client.Timestamp(b.ctx, q.HashAlgorithm, q.HashedMessage, q.Nonce)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := asn1.Marshal(struct {
		Status struct{ Status int }
		Token  asn1.RawValue
	}{Token: asn1.RawValue{FullBytes: tok}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/timestamp-reply")
	_, _ = io.Copy(w, bytes.NewReader(resp))
}

package lazytoken

import (
	"context"
	"crypto"
	"crypto/elliptic"
	"crypto/x509"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/hsm"
)

var _ admin.AuditKeys = (*Keys)(nil)

// Keys opens the token on first use, so admin commands that never touch a
// key never need the PIN or the HSM.
type Keys struct {
	open  func() (*hsm.Token, error)
	label string // the configured token label, for errors naming the token
	token *hsm.Token
}

// New is Keys opening the token with open when a key is first asked for;
// label is the configured token label (pkcs11.token_label).
func New(open func() (*hsm.Token, error), label string) *Keys {
	return &Keys{open: open, label: label}
}

// Label returns the configured token label (pkcs11.token_label).
func (l *Keys) Label() string { return l.label }

func (l *Keys) get() (*hsm.Token, error) {
	if l.token == nil {
		t, err := l.open()
		if err != nil {
			return nil, &admin.Error{Kind: admin.KindUnavailable, Message: err.Error()}
		}
		l.token = t
	}
	return l.token, nil
}

func (l *Keys) GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.GenerateRSA(ctx, label, bits)
}

func (l *Keys) GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*hsm.KeyInfo, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.GenerateEC(ctx, label, curve)
}

func (l *Keys) Key(ctx context.Context, id []byte) (*hsm.Key, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.Key(ctx, id)
}

func (l *Keys) SignDigestOpts(ctx context.Context, id []byte, opts crypto.SignerOpts, digest []byte) ([]byte, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.SignDigestOpts(ctx, id, opts, digest)
}

func (l *Keys) DestroyKey(ctx context.Context, id []byte) error {
	t, err := l.get()
	if err != nil {
		return err
	}
	return t.DestroyKey(ctx, id)
}

func (l *Keys) ImportCertificate(ctx context.Context, id []byte, label string, cert *x509.Certificate) error {
	t, err := l.get()
	if err != nil {
		return err
	}
	return t.ImportCertificate(ctx, id, label, cert)
}

func (l *Keys) StoreCertificates(ctx context.Context, id []byte, label string, certs []*x509.Certificate) error {
	t, err := l.get()
	if err != nil {
		return err
	}
	return t.StoreCertificates(ctx, id, label, certs)
}

// CheckKeys implements admin.TokenReporter.
func (l *Keys) CheckKeys(ctx context.Context) ([]hsm.KeyInfo, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.CheckKeys(ctx)
}

// Capabilities implements admin.TokenReporter; nil before the token is
// open (CheckKeys opens it).
func (l *Keys) Capabilities() *hsm.Capabilities {
	if l.token == nil {
		return nil
	}
	return l.token.Capabilities()
}

// Close closes the token if it was opened.
func (l *Keys) Close() {
	if l.token != nil {
		l.token.Close()
	}
}

// CanEd25519 implements admin.AuditKeys.
func (l *Keys) CanEd25519(ctx context.Context) (bool, error) {
	t, err := l.get()
	if err != nil {
		return false, err
	}
	return t.CanEd25519(ctx)
}

// GenerateEd25519 implements admin.AuditKeys.
func (l *Keys) GenerateEd25519(ctx context.Context, label string) (*hsm.KeyInfo, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.GenerateEd25519(ctx, label)
}

// KeyByLabel implements admin.AuditKeys.
func (l *Keys) KeyByLabel(ctx context.Context, label string) (*hsm.KeyInfo, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.KeyByLabel(ctx, label)
}

// Ed25519Key implements admin.AuditKeys.
func (l *Keys) Ed25519Key(ctx context.Context, id []byte) (*hsm.Ed25519Key, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.Ed25519Key(ctx, id)
}

package tokenkeys

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/elliptic"
	"errors"
	"fmt"

	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/hsm"
)

// Audit key algorithms (CreateAuditKeyRequest.Algorithm).
const (
	AuditKeyEd25519   = "ed25519"
	AuditKeyECDSAP256 = "ecdsa-p256"
)

// AuditKeys is what the audit key and checkpoint operations need of the
// token; *hsm.Token satisfies it, and so does the CLI's lazily opened
// token.
type AuditKeys interface {
	CanEd25519(ctx context.Context) (bool, error)
	GenerateEd25519(ctx context.Context, label string) (*hsm.KeyInfo, error)
	GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*hsm.KeyInfo, error)
	KeyByLabel(ctx context.Context, label string) (*hsm.KeyInfo, error)
	Ed25519Key(ctx context.Context, id []byte) (*hsm.Ed25519Key, error)
	Key(ctx context.Context, id []byte) (*hsm.Key, error)
}

// AuditKeyFor returns the checkpoint.Maker's Key function for the audit
// key labelled label in keys: the Ed25519 or ECDSA key found by label,
// named name. No such key is checkpoint.ErrNoKey.
func AuditKeyFor(keys AuditKeys, label string) func(ctx context.Context, name string) (*checkpoint.Key, error) {
	return func(ctx context.Context, name string) (*checkpoint.Key, error) {
		info, err := keys.KeyByLabel(ctx, label)
		if errors.Is(err, hsm.ErrKeyNotFound) {
			return nil, fmt.Errorf("%w labelled %q in the token: `signd audit key create` makes it", checkpoint.ErrNoKey, label)
		}
		if err != nil {
			return nil, err
		}
		var signer crypto.Signer
		switch info.Public.(type) {
		case ed25519.PublicKey:
			signer, err = keys.Ed25519Key(ctx, info.ID)
		default:
			signer, err = keys.Key(ctx, info.ID)
		}
		if err != nil {
			return nil, err
		}
		return checkpoint.NewKey(name, signer)
	}
}

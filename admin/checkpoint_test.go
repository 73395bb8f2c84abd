package admin

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// noEdDSA is a software token that answers as one without
// CKM_EC_EDWARDS_KEY_PAIR_GEN/CKM_EDDSA (tpm2-pkcs11): the audit key
// must be ECDSA P-256.
type noEdDSA struct {
	*softtoken.Token
	ed25519Asked int
}

func (*noEdDSA) ImportCertificate(context.Context, []byte, string, *x509.Certificate) error {
	return nil
}
func (*noEdDSA) StoreCertificates(context.Context, []byte, string, []*x509.Certificate) error {
	return nil
}

func (*noEdDSA) CanEd25519(context.Context) (bool, error) { return false, nil }

func (k *noEdDSA) GenerateEd25519(context.Context, string) (*hsm.KeyInfo, error) {
	k.ed25519Asked++
	return nil, fmt.Errorf("hsm: generate Ed25519 key: %w: no CKM_EDDSA", hsm.ErrUnsupportedAlgorithm)
}

func (k *noEdDSA) Ed25519Key(context.Context, []byte) (*hsm.Ed25519Key, error) {
	return nil, fmt.Errorf("%w: not Ed25519", hsm.ErrUnsupportedAlgorithm)
}

func (k *noEdDSA) KeyByLabel(ctx context.Context, label string) (*hsm.KeyInfo, error) {
	keys, err := k.Keys(ctx)
	if err != nil {
		return nil, err
	}
	for _, ki := range keys {
		if ki.Label == label {
			return &ki, nil
		}
	}
	return nil, fmt.Errorf("%w: no key labelled %q", hsm.ErrKeyNotFound, label)
}

func checkpointWorld(t *testing.T) (*Local, *noEdDSA, store.Store) {
	t.Helper()
	db := memory.New(memory.Options{})
	tok := &noEdDSA{Token: softtoken.New(softtoken.Options{})}
	mk := &checkpoint.Maker{Store: db, Key: AuditKeyFor(tok, "signd-audit"), Origin: "sign.example.org/audit", Dir: t.TempDir()}
	return New(Config{Store: db, Keys: tok, AuditKeyLabel: "signd-audit", Checkpoints: mk}), tok, db
}

// TestCreateAuditKeyFallsBackToECDSA: on a token without EdDSA the audit
// key is ECDSA P-256; its creation is audited with the actor; a
// checkpoint it signs verifies with the verifier key it shows.
func TestCreateAuditKeyFallsBackToECDSA(t *testing.T) {
	ctx := context.Background()
	l, tok, db := checkpointWorld(t)
	v, err := l.CreateAuditKey(ctx, operator, CreateAuditKeyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Algorithm != "ECDSA P-256" || tok.ed25519Asked != 0 || !strings.HasPrefix(v.VerifierKey, "sign.example.org/audit+") {
		t.Fatalf("audit key %+v (Ed25519 asked %d times), want ECDSA P-256 without asking for Ed25519", v, tok.ed25519Asked)
	}
	if b, err := os.ReadFile(filepath.Join(l.Checkpoints.Dir, checkpoint.KeyName)); err != nil || string(b) != v.VerifierKey+"\n" {
		t.Fatalf("the verifier key in the checkpoint directory: %q, %v", b, err)
	}
	if _, err := l.CreateAuditKey(ctx, operator, CreateAuditKeyRequest{}); KindOf(err) != KindExists {
		t.Fatalf("second audit key: %v, want %s", err, KindExists)
	}
	if _, err := l.CreateAuditKey(ctx, operator, CreateAuditKeyRequest{Algorithm: "rsa-2048"}); KindOf(err) != KindInvalid {
		t.Fatalf("algorithm rsa-2048: %v, want %s", err, KindInvalid)
	}
	var created *store.AuditEntry
	_ = db.View(ctx, func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			if e.Kind == store.AuditAuditKeyCreated && e.Outcome == store.AuditOK {
				created = e // the refusals after it are audited too, as refused
			}
			return nil
		})
	})
	if created == nil || created.Actor != operator.Actor || created.Target != "audit-key:"+v.ID ||
		created.Fields["algorithm"] != "ECDSA P-256" || created.Fields["verifier_key"] != v.VerifierKey {
		t.Fatalf("audit_key_created entry %+v", created)
	}

	cp, err := l.AuditCheckpoint(ctx, operator)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := checkpoint.NewVerifier(v.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Open([]byte(cp.Note), verifier, "sign.example.org/audit"); err != nil || cp.Size != 3 { // the key, and the two refusals after it
		t.Fatalf("checkpoint of %d entries: %v\n%s", cp.Size, err, cp.Note)
	}
	rep, err := l.AuditVerifyCheckpoint(ctx, operator, AuditVerifyCheckpointRequest{Checkpoint: cp.Note})
	if err != nil || !rep.OK || !rep.Extends || rep.Entries != 4 || rep.Key != v.VerifierKey {
		t.Fatalf("verify against the token's key: %+v, %v", rep, err)
	}
	if _, err := l.AuditVerifyCheckpoint(ctx, operator, AuditVerifyCheckpointRequest{}); KindOf(err) != KindInvalid {
		t.Fatalf("no checkpoint: %v", err)
	}
}

// TestCheckpointRoles: the audit key is the security officer's; a
// checkpoint the security officer's or the auditor's; verifying one the
// auditor's. Each refusal is audited.
func TestCheckpointRoles(t *testing.T) {
	ctx := context.Background()
	l, _, _ := checkpointWorld(t)
	officer := SocketPrincipal(1001, "so", []Role{RoleSecurityOfficer})
	admin := SocketPrincipal(1002, "ad", []Role{RoleAdministrator})
	auditor := SocketPrincipal(1003, "au", []Role{RoleAuditor})
	if _, err := l.CreateAuditKey(ctx, admin, CreateAuditKeyRequest{}); KindOf(err) != KindForbidden {
		t.Errorf("administrator creates the audit key: %v", err)
	}
	if _, err := l.CreateAuditKey(ctx, auditor, CreateAuditKeyRequest{}); KindOf(err) != KindForbidden {
		t.Errorf("auditor creates the audit key: %v", err)
	}
	if _, err := l.CreateAuditKey(ctx, officer, CreateAuditKeyRequest{}); err != nil {
		t.Fatalf("security officer: %v", err)
	}
	if _, err := l.AuditCheckpoint(ctx, admin); KindOf(err) != KindForbidden {
		t.Errorf("administrator signs a checkpoint: %v", err)
	}
	cp, err := l.AuditCheckpoint(ctx, auditor)
	if err != nil {
		t.Fatalf("auditor signs a checkpoint: %v", err)
	}
	if _, err := l.AuditVerifyCheckpoint(ctx, officer, AuditVerifyCheckpointRequest{Checkpoint: cp.Note}); KindOf(err) != KindForbidden {
		t.Errorf("security officer verifies: %v", err)
	}
	if _, err := l.ShowAuditKey(ctx, admin); KindOf(err) != KindForbidden {
		t.Errorf("administrator shows the audit key: %v", err)
	}
	if _, err := l.ShowAuditKey(ctx, auditor); err != nil {
		t.Errorf("auditor shows the audit key: %v", err)
	}
}

// TestCheckpointUnconfigured: without a Maker (audit.checkpoint_dir
// empty) the operations answer unavailable, naming the key.
func TestCheckpointUnconfigured(t *testing.T) {
	l := New(Config{Store: memory.New(memory.Options{}), Keys: &noEdDSA{Token: softtoken.New(softtoken.Options{})}})
	_, err := l.AuditCheckpoint(context.Background(), operator)
	var ae *Error
	if !errors.As(err, &ae) || ae.Kind != KindUnavailable || !strings.Contains(ae.Message, "audit.checkpoint_dir") {
		t.Fatalf("AuditCheckpoint without a Maker: %v", err)
	}
}

package admin

import (
	"cmp"
	"context"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// tokenLike is a software token that answers as a real one that lacks EC
// (opencryptoki's soft token) and does not freeze its keys (tpm2-pkcs11):
// the errors and KeyInfo are the hsm package's own.
type tokenLike struct {
	*softtoken.Token
	defects []string
}

func (k tokenLike) GenerateEC(context.Context, string, elliptic.Curve) (*hsm.KeyInfo, error) {
	return nil, fmt.Errorf("hsm: generate EC key: %w: token \"ock\" (IBM SoftTok) has no CKM_EC_KEY_PAIR_GEN: EC keys cannot be made on it; use one of rsa-2048, rsa-3072, rsa-4096", hsm.ErrUnsupportedAlgorithm)
}

func (k tokenLike) GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error) {
	info, err := k.Token.GenerateRSA(ctx, label, bits)
	if err == nil {
		info.Defects = k.defects
	}
	return info, err
}

func (tokenLike) ImportCertificate(context.Context, []byte, string, *x509.Certificate) error {
	return nil
}
func (tokenLike) StoreCertificates(context.Context, []byte, string, []*x509.Certificate) error {
	return nil
}

// TestCreateCredentialTokenRefusal: a key type the token cannot make is
// the operator's error, naming the missing mechanism and what to use
// instead, never "internal error"; nothing is stored.
func TestCreateCredentialTokenRefusal(t *testing.T) {
	l, db := removalWorld(t, tokenLike{Token: softtoken.New(softtoken.Options{})})
	_, err := l.CreateCredential(context.Background(), operator, CreateCredentialRequest{User: "alice", Algo: store.AlgECP256, Subject: "CN=Alice"})
	if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), "has no CKM_EC_KEY_PAIR_GEN") ||
		!strings.Contains(err.Error(), "use one of rsa-2048") || strings.Contains(err.Error(), "internal error") {
		t.Fatalf("error %v (kind %s), want KindInvalid naming the mechanism", err, KindOf(err))
	}
	creds, err := l.ListCredentials(context.Background(), operator, "alice")
	if err != nil || len(creds) != 1 { // c1 of removalWorld only
		t.Fatalf("credentials %v, %v", creds, err)
	}
	_ = db
}

// TestCreateCredentialAuditsFreeze: the enrollment's audit entry says
// what the token does not freeze of the new key.
func TestCreateCredentialAuditsFreeze(t *testing.T) {
	defects := []string{"CKA_LABEL can be changed (C_SetAttributeValue accepted)", "can decrypt (CKA_DECRYPT)"}
	for _, tt := range []struct {
		name    string
		defects []string
		want    string
	}{
		{"frozen", nil, ""},
		{"not frozen", defects, "the token does not freeze the key: " + strings.Join(defects, ", ")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, db := removalWorld(t, tokenLike{Token: softtoken.New(softtoken.Options{}), defects: tt.defects})
			res, err := l.CreateCredential(context.Background(), operator, CreateCredentialRequest{User: "alice", Algo: store.AlgRSA2048, Subject: "CN=Alice"})
			if err != nil {
				t.Fatal(err)
			}
			_, _, audit := present(t, db)
			var enrolled string
			for _, a := range audit {
				if strings.HasPrefix(a, string(store.AuditCredentialEnrolled)) {
					enrolled = a
				}
			}
			if enrolled == "" {
				t.Fatalf("no enrollment audited for %s: %q", res.Credential.ID, audit)
			}
			if got := strings.Contains(enrolled, "does not freeze"); got != (tt.want != "") || !strings.Contains(enrolled, tt.want) {
				t.Errorf("audit entry %q, want %q", enrolled, tt.want)
			}
		})
	}
}

// frozenRequired is a token that refuses to keep a key it does not
// freeze (pkcs11.require_immutable_keys), as hsm.Token answers then.
type frozenRequired struct{ tokenLike }

func (frozenRequired) GenerateRSA(context.Context, string, int) (*hsm.KeyInfo, error) {
	return nil, fmt.Errorf("hsm: generate RSA key: generated key 0a0b (destroyed): %w: token \"tpm\" (IBM SW TPM): CKA_LABEL can be changed (C_SetAttributeValue accepted) (pkcs11.require_immutable_keys)", hsm.ErrKeyNotFrozen)
}

// TestCreateCredentialKeyNotFrozen: with pkcs11.require_immutable_keys a
// key the token does not freeze is a conflict the operator can act on,
// naming the defect and the setting, and no credential is stored.
func TestCreateCredentialKeyNotFrozen(t *testing.T) {
	l, _ := removalWorld(t, frozenRequired{tokenLike{Token: softtoken.New(softtoken.Options{})}})
	_, err := l.CreateCredential(context.Background(), operator, CreateCredentialRequest{User: "alice", Algo: store.AlgRSA2048, Subject: "CN=Alice"})
	if KindOf(err) != KindConflict || !strings.Contains(err.Error(), "CKA_LABEL can be changed") || !strings.Contains(err.Error(), "pkcs11.require_immutable_keys") {
		t.Fatalf("error %v (kind %s), want KindConflict naming the defect and the setting", err, KindOf(err))
	}
	if creds, err := l.ListCredentials(context.Background(), operator, "alice"); err != nil || len(creds) != 1 {
		t.Fatalf("credentials %v, %v", creds, err)
	}
}

// TestCreateCredentialDescription: the description is stored and shown;
// one the pages could not show faithfully is refused before a key is
// generated.
func TestCreateCredentialDescription(t *testing.T) {
	for _, tt := range []struct {
		name, desc, err string
	}{
		{"none", "", ""},
		{"plain", "Company seal 2027", ""},
		{"200 characters", strings.Repeat("é", MaxCredentialDescription), ""},
		{"201 characters", strings.Repeat("é", MaxCredentialDescription+1), "description must be 1 to 200 printable characters"},
		{"control character", "Seal\x1b[2J", "description has a character that is not printable (U+001B)"},
		{"newline", "Seal\nfake line", "not printable (U+000A)"},
		{"bidi override", "Seal\u202eevil", "not printable (U+202E)"},
		{"padded", " Seal", "without white space around them"},
		{"not UTF-8", "Seal\xff", "description must be 1 to 200 printable characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := removalWorld(t, tokenLike{Token: softtoken.New(softtoken.Options{})})
			res, err := l.CreateCredential(context.Background(), operator, CreateCredentialRequest{User: "alice", Algo: store.AlgRSA2048, Subject: "CN=Alice", Description: tt.desc})
			if tt.err != "" {
				if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v (kind %s), want KindInvalid %q", err, KindOf(err), tt.err)
				}
				creds, err := l.ListCredentials(context.Background(), operator, "alice")
				if err != nil || len(creds) != 1 { // c1 of removalWorld only
					t.Fatalf("credentials %v, %v", creds, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.ShowCredential(context.Background(), operator, res.Credential.ID)
			if err != nil || got.Description != tt.desc || res.Credential.Description != tt.desc {
				t.Fatalf("stored description %q (created %q), %v; want %q", got.Description, res.Credential.Description, err, tt.desc)
			}
		})
	}
}

// lostAnswer is a store whose next Update commits and then answers
// store.ErrOutcomeUnknown, as store/etcd does for a commit whose answer
// was lost; readFails makes every View fail after it (the cluster lost
// its quorum). With applied false the Update fails with fail, or as a
// full disk's does: nothing is stored (readFails then too).
type lostAnswer struct {
	store.Store
	applied, readFails bool
	fail               error
	failing            atomic.Bool
}

func (s *lostAnswer) Update(ctx context.Context, fn func(store.Tx) error) error {
	if !s.applied {
		err := s.Store.Update(ctx, storetest.ThenFail(fn, cmp.Or(s.fail, storetest.ErrDiskFull)))
		s.failing.Store(err != nil && s.readFails)
		return err
	}
	if err := s.Store.Update(ctx, fn); err != nil {
		return err
	}
	s.failing.Store(s.readFails)
	return fmt.Errorf("%w: etcd: context deadline exceeded", store.ErrOutcomeUnknown)
}

func (s *lostAnswer) View(ctx context.Context, fn func(store.Tx) error) error {
	if s.failing.Load() {
		return storetest.ErrDiskFailed
	}
	return s.Store.View(ctx, fn)
}

func (s *lostAnswer) Fence(ctx context.Context, fn func(store.Tx) error) error {
	if s.failing.Load() {
		return storetest.ErrDiskFailed
	}
	return s.Store.Fence(ctx, fn)
}

// TestNewKeyOutcomeUnknown: a key made in the token for a record
// (a credential; the TSA key, whose record is its audit entry) whose
// commit applied but answered store.ErrOutcomeUnknown keeps its key and is
// reported done, with its one entry; when the store cannot be read
// either, the key is kept and named to the operator. A transaction that
// cannot have committed (a full disk or a failed read in it: plain
// store.ErrUnavailable) destroys the key, also when the store cannot be
// read after it: an operator's retries leave no orphans in the token.
func TestNewKeyOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	acts := []struct {
		name string
		kind store.AuditKind
		do   func(l *Local) error
	}{
		{name: "credential", kind: store.AuditCredentialEnrolled, do: func(l *Local) error {
			res, err := l.CreateCredential(ctx, operator, CreateCredentialRequest{User: "alice", Algo: store.AlgRSA2048, Subject: "CN=Alice"})
			if err == nil && res.Credential.Status != string(store.CredentialPending) {
				t.Errorf("credential %+v, want the stored pending one", res.Credential)
			}
			return err
		}},
		{name: "tsa", kind: store.AuditTSAEnrolled, do: func(l *Local) error {
			res, err := l.EnrollTSA(ctx, operator, EnrollTSARequest{Algo: "rsa-2048"})
			if err == nil && (res.KeyID == "" || res.CSRPEM == "") {
				t.Errorf("EnrollTSA = %+v, want the key and its CSR", res)
			}
			return err
		}},
	}
	for _, op := range acts {
		for _, tt := range []struct {
			name               string
			applied, readFails bool
			fail               error
			wantErr            Kind
			wantKey            bool
		}{
			{name: "applied", applied: true, wantKey: true},
			{name: "applied, the store cannot be read", applied: true, readFails: true, wantErr: KindUnavailable, wantKey: true},
			{name: "not applied", wantErr: KindUnavailable},
			{name: "not applied, the store cannot be read", readFails: true, wantErr: KindUnavailable},
			{name: "not applied (no quorum), the store cannot be read", fail: fmt.Errorf("%w: etcd: etcdserver: request timed out", store.ErrUnavailable), readFails: true, wantErr: KindUnavailable},
		} {
			t.Run(op.name+"/"+tt.name, func(t *testing.T) {
				tok := softtoken.New(softtoken.Options{})
				base, db := removalWorld(t, tokenLike{Token: tok})
				l := base.reconfigured(func(c *Config) {
					c.Store = &lostAnswer{Store: db, applied: tt.applied, readFails: tt.readFails, fail: tt.fail}
				})
				err := op.do(l)
				if (err == nil) != (tt.wantErr == "") || err != nil && KindOf(err) != tt.wantErr {
					t.Fatalf("%s = %v (%s), want %q", op.name, err, KindOf(err), tt.wantErr)
				}
				infos, kerr := tok.Keys(ctx)
				if kerr != nil || len(infos) != map[bool]int{true: 1}[tt.wantKey] {
					t.Fatalf("keys in the token: %v, %v; want the new key kept: %v", infos, kerr, tt.wantKey)
				}
				if tt.readFails && tt.wantKey && !strings.Contains(err.Error(), fmt.Sprintf("%x with label %q is kept", infos[0].ID, infos[0].Label)) {
					t.Errorf("error %v does not name the kept key", err)
				}
				if err == nil {
					_, _, audit := present(t, db)
					if n := strings.Count(strings.Join(audit, " "), string(op.kind)+"/"); n != 1 {
						t.Errorf("audit %v: %d %s entries, want 1", audit, n, op.kind)
					}
				}
			})
		}
	}
}

// TestImportCertificateOutcomeUnknown: a certificate import whose commit
// answered store.ErrOutcomeUnknown is reported as a change that may or may
// not have been applied, with the command that shows it, never as "try
// again"; it undoes nothing (the certificate in the token is public and
// is replaced by the next import), so the operator's retry enables the
// credential whichever way the lost commit went.
func TestImportCertificateOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			base, db := removalWorld(t, tokenLike{Token: softtoken.New(softtoken.Options{})})
			res, err := base.CreateCredential(ctx, operator, CreateCredentialRequest{User: "alice", Algo: store.AlgRSA2048, Subject: "CN=Alice"})
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode([]byte(res.CSRPEM))
			csr, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			ca := certstatustest.New(t, "Test CA", nil)
			leaf := ca.Issue(t, csr.PublicKey, certstatustest.Leaf{Subject: pkix.Name{CommonName: "Alice"}})
			chain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})) +
				string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
			id := res.Credential.ID
			req := ImportCertificateRequest{ID: id, ChainPEM: chain}

			l := base.reconfigured(func(c *Config) { c.Store = &lostAnswer{Store: db, applied: applied} })
			_, err = l.ImportCertificate(ctx, operator, req)
			want := fmt.Sprintf("the change may or may not have been applied; check with `signd credential show %s` before trying again", id)
			if KindOf(err) != KindUnavailable || applied && !strings.Contains(err.Error(), want) {
				t.Fatalf("ImportCertificate = %v (%s), want KindUnavailable saying %q", err, KindOf(err), want)
			}
			got, err := base.ShowCredential(ctx, operator, id)
			if err != nil || (got.Status == string(store.CredentialEnabled)) != applied {
				t.Fatalf("credential %s after the lost answer: %+v, %v; want enabled: %v", id, got, err, applied)
			}
			if v, err := base.ImportCertificate(ctx, operator, req); err != nil || v.Status != string(store.CredentialEnabled) {
				t.Fatalf("the operator's retry: %+v, %v; want the credential enabled", v, err)
			}
		})
	}
}

package admin

import (
	"context"
	"crypto/elliptic"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest/backends"
)

// destroyOnly is a KeyStore whose DestroyKey answers err (fault
// injection); the real token is exercised by cmd/signd's matrix test.
type destroyOnly struct {
	err   error
	calls int
}

func (k *destroyOnly) DestroyKey(context.Context, []byte) error { k.calls++; return k.err }
func (*destroyOnly) GenerateEC(context.Context, string, elliptic.Curve) (*hsm.KeyInfo, error) {
	return nil, errors.New("not in this test")
}

func (*destroyOnly) GenerateRSA(context.Context, string, int) (*hsm.KeyInfo, error) {
	return nil, errors.New("not in this test")
}
func (*destroyOnly) Key(context.Context, []byte) (*hsm.Key, error) {
	return nil, errors.New("not in this test")
}
func (*destroyOnly) ImportCertificate(context.Context, []byte, string, *x509.Certificate) error {
	return errors.New("not in this test")
}
func (*destroyOnly) StoreCertificates(context.Context, []byte, string, []*x509.Certificate) error {
	return errors.New("not in this test")
}

// removalWorld is a store with alice, client rp, alice's credential c1
// and a SAD bound to it.
func removalWorld(t *testing.T, keys KeyStore) (*Local, *bolt.DB) {
	t.Helper()
	db := backends.Bolt(t, bolt.Options{})
	err := db.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive}); err != nil {
			return err
		}
		if err := tx.CreateClient(&store.Client{ID: "rp", SecretHash: store.HashSecret("s"), RedirectURIs: []string{"https://rp.example/cb"}}); err != nil {
			return err
		}
		if err := tx.CreateCredential(&store.Credential{ID: "c1", Owner: "alice", KeyID: []byte{1, 2, 3}, Label: "signd-c1",
			Algorithm: store.AlgRSA2048, KeyBits: 2048, Status: store.CredentialPending}); err != nil {
			return err
		}
		return tx.CreateToken(&store.Token{Hash: store.Fingerprint("sad"), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			CredentialID: "c1", Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: time.Now().Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Store: db, Keys: keys}), db
}

// present reports whether credential c1 and the SAD are stored, and the
// kinds of the audit entries.
func present(t *testing.T, db *bolt.DB) (cred, sad bool, audit []string) {
	t.Helper()
	err := db.View(context.Background(), func(tx store.Tx) error {
		_, err := tx.Credential("c1")
		cred = err == nil
		_, err = tx.Token(store.Fingerprint("sad"))
		sad = err == nil
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			audit = append(audit, fmt.Sprintf("%s/%s/%s", e.Kind, e.Outcome, e.Reason))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return cred, sad, audit
}

func TestRemoveCredentialFaults(t *testing.T) {
	cases := []struct {
		name          string
		destroyErr    error
		wantKind      Kind   // "" = success
		wantDestroyed string // joined Destroyed of a success
		wantAudit     string
	}{
		{
			name: "token_unavailable_changes_nothing", destroyErr: fmt.Errorf("%w: slot gone", hsm.ErrTokenUnavailable),
			wantKind:  KindUnavailable,
			wantAudit: "credential_removed/failed/destroy key: the HSM is unavailable, try again: hsm: token unavailable: slot gone",
		},
		{
			name: "key_already_gone_finishes_the_removal", destroyErr: fmt.Errorf("%w: no RSA key", hsm.ErrKeyNotFound),
			wantAudit: "credential_removed/ok/by an admin: key pair already absent from the HSM; revoked 0 access tokens, 1 SAD, 0 authorization codes, 0 pending authorization requests, 0 login sessions",
		},
		{
			name: "destroyed", wantDestroyed: "private key, public key",
			wantAudit: "credential_removed/ok/by an admin: key pair destroyed in the HSM; revoked 0 access tokens, 1 SAD, 0 authorization codes, 0 pending authorization requests, 0 login sessions",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keys := &destroyOnly{err: tc.destroyErr}
			l, db := removalWorld(t, keys)
			res, err := l.RemoveCredential(context.Background(), operator, "c1")
			cred, sad, audit := present(t, db)
			if keys.calls != 1 {
				t.Errorf("DestroyKey called %d times", keys.calls)
			}
			if tc.wantKind != "" {
				if KindOf(err) != tc.wantKind {
					t.Fatalf("err = %v (%s), want kind %s", err, KindOf(err), tc.wantKind)
				}
				// Nothing changed; the failed attempt is audited.
				if !cred || !sad || len(audit) != 1 || audit[0] != tc.wantAudit {
					t.Errorf("after a refused removal: credential %v, SAD %v, audit %q; want both kept, the entry %q", cred, sad, audit, tc.wantAudit)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(res.Destroyed, ", "); got != tc.wantDestroyed || res.Revoked.SADs != 1 || res.Owner != "alice" || res.KeyID != "010203" {
				t.Errorf("result %+v", res)
			}
			if cred || sad {
				t.Errorf("after the removal: credential %v, SAD %v", cred, sad)
			}
			if len(audit) != 1 || audit[0] != tc.wantAudit {
				t.Errorf("audit %q, want %q", audit, tc.wantAudit)
			}
		})
	}
}

func TestRemoveUserRefusesAnOwner(t *testing.T) {
	l, db := removalWorld(t, &destroyOnly{})
	_, err := l.RemoveUser(context.Background(), operator, "alice")
	if KindOf(err) != KindConflict || !strings.Contains(err.Error(), `user "alice" still owns credentials c1`) {
		t.Fatalf("err = %v, want a conflict naming c1", err)
	}
	if cred, sad, _ := present(t, db); !cred || !sad {
		t.Errorf("after the refusal: credential %v, SAD %v", cred, sad)
	}
	if _, err := l.ShowUser(context.Background(), operator, "alice"); err != nil {
		t.Errorf("alice after the refusal: %v", err)
	}
	if _, err := l.RemoveUser(context.Background(), operator, "nobody"); KindOf(err) != KindNotFound {
		t.Errorf("RemoveUser(nobody) = %v, want not found", err)
	}
}

// failingUpdate fails every write transaction, as a full disk would.
type failingUpdate struct{ store.Store }

func (failingUpdate) Update(context.Context, func(store.Tx) error) error {
	return errors.New("store: write signd.db: no space left on device")
}

// TestRemoveCredentialStoreFailsAfterDestroy: the key is gone but the
// record stays; the operator is told to run the removal again, which then
// finishes (the key already absent).
func TestRemoveCredentialStoreFailsAfterDestroy(t *testing.T) {
	keys := &destroyOnly{}
	l, db := removalWorld(t, keys)
	l = l.reconfigured(func(c *Config) { c.Store = failingUpdate{db} })
	_, err := l.RemoveCredential(context.Background(), operator, "c1")
	if err == nil || !strings.Contains(err.Error(), "the key pair is already destroyed in the HSM: run `signd credential remove c1` again") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "no space left") {
		t.Errorf("the store's internal error reached the operator: %v", err)
	}
	if cred, sad, _ := present(t, db); !cred || !sad {
		t.Errorf("after the failed write: credential %v, SAD %v; want both kept", cred, sad)
	}
	l, keys.err = l.reconfigured(func(c *Config) { c.Store = db }), fmt.Errorf("%w: gone", hsm.ErrKeyNotFound)
	res, err := l.RemoveCredential(context.Background(), operator, "c1")
	if err != nil || len(res.Destroyed) != 0 || res.Revoked.SADs != 1 {
		t.Fatalf("second removal: %+v, %v", res, err)
	}
	if cred, sad, _ := present(t, db); cred || sad {
		t.Errorf("after the second removal: credential %v, SAD %v", cred, sad)
	}
}

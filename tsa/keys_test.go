package tsa_test

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

// certToken is a software token that also holds certificates under labels.
type certToken struct {
	*softtoken.Token
	certs map[string][]hsm.Certificate
}

func (c *certToken) Certificates(_ context.Context, label string) ([]hsm.Certificate, error) {
	return c.certs[label], nil
}

// records is the store's records that hold keys, in memory; reads counts
// its transactions.
type records struct {
	creds []store.Credential // in ID order
	oidc  []store.SigningKey
	reads int
}

func (r *records) View(_ context.Context, fn func(tsa.KeyRecords) error) error {
	r.reads++
	return fn(r)
}

func (r *records) Credentials(owner, after string, limit int) ([]store.Credential, error) {
	var out []store.Credential
	for _, c := range r.creds {
		if c.ID > after && (limit <= 0 || len(out) < limit) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (r *records) SigningKeys() ([]store.SigningKey, error) { return r.oidc, nil }

func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		tsa, key        string
		isKey, reserved bool
	}{
		{"", "signd-tsa-3f2a", true, true},
		{"", "signd-tsa", false, true},
		{"", "signd-tsa-", false, true},
		{"", "signd-tsa2-3f2a", false, false},
		{"", "signd-3f2a", false, false},
		{"acts-tsa", "acts-tsa-x", true, true},
		{"acts-tsa", "signd-tsa-x", false, false},
	} {
		if got := tsa.IsKeyLabel(tc.tsa, tc.key); got != tc.isKey {
			t.Errorf("IsKeyLabel(%q, %q) = %v", tc.tsa, tc.key, got)
		}
		if got := tsa.ReservedLabel(tc.tsa, tc.key); got != tc.reserved {
			t.Errorf("ReservedLabel(%q, %q) = %v", tc.tsa, tc.key, got)
		}
	}
}

// TestKeyHolder finds a credential's key past the first page of
// credentials, and an OIDC signing key's.
func TestKeyHolder(t *testing.T) {
	r := &records{oidc: []store.SigningKey{{KID: "kid-1", KeyID: []byte("oidc key")}}}
	for i := range 1500 {
		r.creds = append(r.creds, store.Credential{ID: fmt.Sprintf("c%05d", i), KeyID: fmt.Appendf(nil, "key %d", i)})
	}
	for _, tc := range []struct {
		id, want string
	}{
		{"key 0", "credential c00000"},
		{"key 1499", "credential c01499"},
		{"oidc key", "OIDC signing key kid-1"},
		{"key 1500", ""},
	} {
		if got, err := tsa.KeyHolder(r, []byte(tc.id)); err != nil || got != tc.want {
			t.Errorf("KeyHolder(%q) = %q, %v; want %q", tc.id, got, err, tc.want)
		}
	}
}

// TestHSMSourceTimeStampingKeysOnly: of the certificates under the TSA
// label, one whose key a credential or an OIDC signing key holds, or whose
// key is not labelled as signd tsa enroll labels it, never signs, however
// new; the TSA's own key does. The store is read once per key.
func TestHSMSourceTimeStampingKeysOnly(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	tok := &certToken{Token: softtoken.New(softtoken.Options{}), certs: map[string][]hsm.Certificate{}}
	ca := certstatustest.New(t, "TSA CA", nil)
	r := &records{}
	var own []byte
	add := func(label string, age time.Duration) []byte {
		t.Helper()
		info, err := tok.GenerateEC(ctx, label, elliptic.P256())
		if err != nil {
			t.Fatal(err)
		}
		cert := ca.Issue(t, info.Public, certstatustest.Leaf{Subject: pkix.Name{CommonName: label}, NotBefore: now.Add(-age),
			NotAfter: now.Add(time.Hour), ExtraExtensions: eku(t, true, oidTimeStamping)})
		tok.certs[tsa.DefaultLabel] = append(tok.certs[tsa.DefaultLabel], hsm.Certificate{ID: info.ID, Cert: cert})
		return info.ID
	}
	own = add("signd-tsa-own", 3*time.Hour)
	// A credential labelled under the TSA label before the label was
	// reserved, an OIDC key so labelled, and a key made by hand: each
	// with a newer certificate than the TSA's own.
	r.creds = []store.Credential{{ID: "legacy", KeyID: add("signd-tsa-legacy", 2*time.Hour)}}
	r.oidc = []store.SigningKey{{KID: "kid", KeyID: add("signd-tsa-oidc", 2*time.Hour)}}
	add("by-hand", time.Hour)

	src := &tsa.HSMSource{Token: tok, Records: r, Now: func() time.Time { return now }}
	signer, cert, err := src.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := signer.(*hsm.Key).ID(); !bytes.Equal(got, own) {
		t.Errorf("signs with %q (key %x), want the TSA's own key %x", cert.Subject.CommonName, got, own)
	}
	if r.reads != 3 {
		t.Errorf("the store was read %d times for three keys to vet, want 3", r.reads)
	}
	// A key found free is not looked up again.
	now = now.Add(2 * time.Minute)
	if _, _, err := src.Current(ctx); err != nil || r.reads != 5 {
		t.Errorf("Current a minute later: %v, %d reads of the store, want 5", err, r.reads)
	}

	// Only held or foreign keys: none signs, and the answer says why.
	tok.certs[tsa.DefaultLabel] = tok.certs[tsa.DefaultLabel][1:]
	src = &tsa.HSMSource{Token: tok, Records: r, Now: func() time.Time { return now }}
	if _, _, err := src.Current(ctx); !errors.Is(err, tsa.ErrNotEnrolled) {
		t.Errorf("Current without a TSA key: %v, want ErrNotEnrolled", err)
	} else if !strings.Contains(err.Error(), "is not a time-stamping key") {
		t.Errorf("Current without a TSA key: %v, want why", err)
	}
}

// revocation answers Status from a table by leaf; chains records what it
// was asked.
type revocation struct {
	status map[string]certstatus.Status // by leaf DER; absent = Valid
	stale  map[string]bool              // by leaf DER: not current
	chains [][][]byte
}

func (r *revocation) Status(chain [][]byte) (certstatus.Status, bool) {
	r.chains = append(r.chains, chain)
	st, ok := r.status[string(chain[0])]
	if !ok {
		st = certstatus.Valid
	}
	return st, !r.stale[string(chain[0])]
}

// TestHSMSourceRevocation: with a Revocation, a TSA certificate signs
// only while its chain — built from the issuers kept under IssuerLabel —
// is answered Valid and current, checked on every call, cached or not;
// another certificate takes over, and with none the source answers
// ErrNotEnrolled saying why. Chains lists every chain to check.
func TestHSMSourceRevocation(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	tok := &certToken{Token: softtoken.New(softtoken.Options{}), certs: map[string][]hsm.Certificate{}}
	root := certstatustest.New(t, "Root CA", nil)
	sub := root.Intermediate(t, "Sub CA")
	add := func(label string, age time.Duration) *x509.Certificate {
		t.Helper()
		info, err := tok.GenerateEC(ctx, label, elliptic.P256())
		if err != nil {
			t.Fatal(err)
		}
		cert := sub.Issue(t, info.Public, certstatustest.Leaf{Subject: pkix.Name{CommonName: label}, NotBefore: now.Add(-age),
			NotAfter: now.Add(time.Hour), CRL: true, ExtraExtensions: eku(t, true, oidTimeStamping)})
		tok.certs[tsa.DefaultLabel] = append(tok.certs[tsa.DefaultLabel], hsm.Certificate{ID: info.ID, Cert: cert})
		// Stored root first: the chain is put in order all the same.
		for _, is := range []*x509.Certificate{root.Cert, sub.Cert} {
			tok.certs[tsa.IssuerLabel("")] = append(tok.certs[tsa.IssuerLabel("")], hsm.Certificate{ID: info.ID, Cert: is})
		}
		return cert
	}
	older, newer := add("signd-tsa-older", 2*time.Hour), add("signd-tsa-newer", time.Hour)
	rev := &revocation{status: map[string]certstatus.Status{}, stale: map[string]bool{}}
	src := &tsa.HSMSource{Token: tok, Records: &records{}, Now: func() time.Time { return now }, Revocation: rev}
	current := func() *x509.Certificate {
		t.Helper()
		_, cert, err := src.Current(ctx)
		if err != nil {
			t.Fatalf("Current: %v", err)
		}
		return cert
	}
	if got := current(); !got.Equal(newer) {
		t.Errorf("Current = %q, want the newer certificate", got.Subject)
	}
	if len(rev.chains) == 0 {
		t.Fatal("Current did not ask the certificate's status")
	}
	if last := rev.chains[len(rev.chains)-1]; len(last) != 3 || !bytes.Equal(last[0], newer.Raw) ||
		!bytes.Equal(last[1], sub.Cert.Raw) || !bytes.Equal(last[2], root.Cert.Raw) {
		t.Errorf("the chain checked has %d certificates, want the leaf, Sub CA, Root CA", len(last))
	}
	// Revoked while cached: the next call takes the other.
	rev.status[string(newer.Raw)] = certstatus.Revoked
	if got := current(); !got.Equal(older) {
		t.Errorf("Current with the newer revoked = %q, want the older", got.Subject)
	}
	chains, err := src.Chains(ctx)
	if err != nil || len(chains) != 2 {
		t.Errorf("Chains = %d chains, %v; want both", len(chains), err)
	}
	// Both refused: the answer names the newer's reason.
	rev.status[string(older.Raw)] = certstatus.Revoked
	for _, tc := range []struct {
		name string
		set  func()
		want string
	}{
		{"the newer unknown", func() { rev.status[string(newer.Raw)], rev.stale[string(newer.Raw)] = certstatus.Valid, true },
			"the certificate's revocation status is not known now"},
		{"the newer suspended", func() { rev.status[string(newer.Raw)], rev.stale[string(newer.Raw)] = certstatus.Suspended, false },
			"the certificate is suspended"},
	} {
		tc.set()
		if _, _, err := src.Current(ctx); !errors.Is(err, tsa.ErrNotEnrolled) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Current: %v, want ErrNotEnrolled: %q", tc.name, err, tc.want)
		}
	}
}

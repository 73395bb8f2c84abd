package daemonaudit

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// appended collects what a Recorder appends.
type appended []*store.AuditEntry

func (a *appended) AppendAudit(e *store.AuditEntry) error {
	*a = append(*a, e)
	return nil
}

// TestOIDCKeyEntries: what the daemon changes by itself in the OIDC keys at
// start, one entry of each change of the key ring: a key created, a next
// key promoted (naming the key it retired), retired keys purged.
func TestOIDCKeyEntries(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	key := func(kid, alg string, st store.SigningKeyState) *store.SigningKey {
		return &store.SigningKey{KID: kid, Algorithm: alg, State: st, Label: "signd-oidc-" + kid}
	}
	for _, tc := range []struct {
		name   string
		change oidc.KeyChange
		want   string // kind|target|reason|fields
	}{
		{"first key", oidc.KeyChange{Created: key("a", "RS256", store.SigningKeyActive)},
			"oidc_key_created|oidc-key:a|at start|map[alg:RS256 label:signd-oidc-a state:active]"},
		{"next promoted", oidc.KeyChange{Activated: key("b", "ES256", store.SigningKeyActive), Retired: key("a", "ES256", store.SigningKeyRetired)},
			"oidc_keys_rotated|oidc-key:b|next key promoted at start|map[active:b alg:ES256 retired:a]"},
		{"next promoted, none active", oidc.KeyChange{Activated: key("b", "PS256", store.SigningKeyActive)},
			"oidc_keys_rotated|oidc-key:b|next key promoted at start|map[active:b alg:PS256]"},
		{"purged", oidc.KeyChange{Purged: []string{"r1", "r2"}},
			"oidc_keys_rotated||retired keys purged: their ID tokens have expired|map[count:2 purged:r1 r2]"},
		{"purged, one kept", oidc.KeyChange{Purged: []string{"r1"}, PurgeErr: errors.New("oidc: destroy retired signing key r2: hsm: busy")},
			"oidc_keys_rotated||retired keys purged: their ID tokens have expired|map[count:1 purge_error:oidc: destroy retired signing key r2: hsm: busy purged:r1]"},
	} {
		var got appended
		if err := OIDCKeys(func() time.Time { return now })(&got, tc.change); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, a := range got {
			if a.Actor != "signd" || a.Outcome != store.AuditOK || !a.Time.Equal(now) {
				t.Errorf("%s: entry %+v", tc.name, a)
			}
			lines = append(lines, fmt.Sprintf("%s|%s|%s|%v", a.Kind, a.Target, a.Reason, a.Fields))
		}
		if strings.Join(lines, "\n") != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, lines, tc.want)
		}
	}
}

// TestAPIClientCRL: config_loaded names the provisioning API's CRL in
// force by its number, thisUpdate (UTC), issuer name and the SHA-256 of its DER
// (sha256("der") below), or says there is none.
func TestAPIClientCRL(t *testing.T) {
	this := time.Date(2026, 11, 27, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name string
		crl  *x509.RevocationList
		want string
	}{
		{"none", nil, "map[admin.api_client_crl:none event:reload]"},
		{"numbered", &x509.RevocationList{Raw: []byte("der"), Number: big.NewInt(42), ThisUpdate: this, Issuer: pkix.Name{CommonName: "API CA"}},
			"map[admin.api_client_crl.issuer:CN=API CA admin.api_client_crl.number:42 admin.api_client_crl.sha256:5050d80d22ecd471ea55df7034042c1e041341ff4066e7f6ff38e20b720df8ea admin.api_client_crl.this_update:2026-11-27T11:00:00Z event:reload]"},
	} {
		e := &store.AuditEntry{Fields: map[string]string{"event": ConfigReload}}
		APIClientCRL(e, tc.crl)
		if got := fmt.Sprint(e.Fields); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// brokenLog is a store whose audit log cannot be read.
type brokenLog struct{ store.Store }

func (b brokenLog) Update(ctx context.Context, fn func(store.Tx) error) error {
	return b.Store.Update(ctx, func(tx store.Tx) error { return fn(brokenTx{tx}) })
}

type brokenTx struct{ store.Tx }

func (brokenTx) AuditChains() ([]store.AuditChainInfo, error) {
	return nil, errors.New("store: unavailable")
}

// TestAppendStart: a start's config_loaded entry is appended unless its
// CRL goes back from the last one of its issuer a config_loaded entry
// recorded in force (refused entries, those recording none and those of
// another issuer passed over: a CA's old CRL put back after a switch to
// another CA and back is still refused);
// then a refused config_loaded entry (event start) naming the CRL is
// appended instead and a *RollbackError says why. An audit log that
// cannot be read refuses the start; without a CRL it is not read.
func TestAppendStart(t *testing.T) {
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	crlOf := func(ca string, n int64) *x509.RevocationList {
		return &x509.RevocationList{Raw: []byte(fmt.Sprint(ca, " crl ", n)), Number: big.NewInt(n), ThisUpdate: now.Add(time.Duration(n) * time.Hour),
			Issuer: pkix.Name{CommonName: ca}}
	}
	crl := func(n int64) *x509.RevocationList { return crlOf("API CA", n) }
	start := func(c *x509.RevocationList) *store.AuditEntry {
		e := &store.AuditEntry{Time: now, Kind: store.AuditConfigLoaded, Actor: "signd", Outcome: store.AuditOK, Fields: map[string]string{"event": ConfigStart}}
		APIClientCRL(e, c)
		return e
	}
	db := memory.New(memory.Options{})
	ctx := context.Background()
	steps := []struct {
		name string
		crl  *x509.RevocationList
		err  string // "" = appended
	}{
		{"the first start", crl(5), ""},
		{"a newer CRL", crl(6), ""},
		{"the same CRL", crl(6), ""},
		{"an older CRL", crl(4), "the CRL's cRLNumber 4 is lower than 6 of the CRL last in force: an older CRL would make revoked certificates good again. The audit log's config_loaded entry 3 "},
		{"no CRL", nil, ""},
		{"an older CRL after none", crl(5), "the CRL's cRLNumber 5 is lower than 6 of the CRL last in force: an older CRL would make revoked certificates good again. The audit log's config_loaded entry 3 "},
		{"a newer CRL after refusals", crl(7), ""},
		{"another CA's CRL", crlOf("new API CA", 2), ""},
		{"the first CA's older CRL, after the other's", crl(6), "the CRL's cRLNumber 6 is lower than 7 of the CRL last in force: an older CRL would make revoked certificates good again. The audit log's config_loaded entry 7 "},
		{"the first CA's newest CRL again", crl(7), ""},
		{"the other CA's older CRL, after the first's", crlOf("new API CA", 1), "the CRL's cRLNumber 1 is lower than 2 of the CRL last in force: an older CRL would make revoked certificates good again. The audit log's config_loaded entry 8 "},
	}
	for _, st := range steps {
		err := AppendStart(ctx, db, start(st.crl), st.crl)
		var rb *RollbackError
		switch {
		case st.err == "" && err != nil:
			t.Fatalf("%s: refused: %v", st.name, err)
		case st.err != "" && (!errors.As(err, &rb) || !strings.HasPrefix(err.Error(), st.err)):
			t.Fatalf("%s: %v, want a *RollbackError %s…", st.name, err, st.err)
		}
	}
	var got []string
	err := db.View(ctx, func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			got = append(got, fmt.Sprintf("%s %s %s ref %d", e.Fields["event"], e.Outcome, e.Fields["admin.api_client_crl.number"], e.Ref))
			return nil
		})
	})
	want := "start ok 5 ref 0,start ok 6 ref 0,start ok 6 ref 0,start refused 4 ref 3,start ok  ref 0,start refused 5 ref 3,start ok 7 ref 0," +
		"start ok 2 ref 0,start refused 6 ref 7,start ok 7 ref 0,start refused 1 ref 8"
	if err != nil || strings.Join(got, ",") != want {
		t.Fatalf("entries %q, %v; want %s", got, err, want)
	}

	if err := AppendStart(ctx, brokenLog{db}, start(crl(8)), crl(8)); err == nil || !strings.Contains(err.Error(), "reading the CRL last in force") {
		t.Fatalf("an unreadable audit log: %v", err)
	}
	if err := AppendStart(ctx, brokenLog{db}, start(nil), nil); err != nil {
		t.Fatalf("no CRL, an unreadable audit log: %v", err)
	}
}

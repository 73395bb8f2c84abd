package daemonaudit

import (
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
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
// force by its number, thisUpdate (UTC) and the SHA-256 of its DER
// (sha256("der") below), or says there is none.
func TestAPIClientCRL(t *testing.T) {
	this := time.Date(2026, 11, 27, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name string
		crl  *x509.RevocationList
		want string
	}{
		{"none", nil, "map[admin.api_client_crl:none event:reload]"},
		{"numbered", &x509.RevocationList{Raw: []byte("der"), Number: big.NewInt(42), ThisUpdate: this},
			"map[admin.api_client_crl.number:42 admin.api_client_crl.sha256:5050d80d22ecd471ea55df7034042c1e041341ff4066e7f6ff38e20b720df8ea admin.api_client_crl.this_update:2026-11-27T11:00:00Z event:reload]"},
	} {
		e := &store.AuditEntry{Fields: map[string]string{"event": ConfigReload}}
		APIClientCRL(e, tc.crl)
		if got := fmt.Sprint(e.Fields); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

package admin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// TestOIDCKeyActsInTheirTransaction: `oidc keys create` and `rotate`, and
// the first key of an algorithm a new client needs, are committed with
// their audit entry or not at all: where the entry cannot be appended the
// key ring's change is undone, and the operator is told so.
func TestOIDCKeyActsInTheirTransaction(t *testing.T) {
	db := actsStore(t)
	tok := softtoken.New(softtoken.Options{})
	ring := func(s store.Store) *oidc.KeyRing {
		return &oidc.KeyRing{Store: store.Scope(s, func(tx store.Tx) oidc.KeyRingTx { return tx }), HSM: tok, IDTokenTTL: time.Hour}
	}
	ok := New(Config{Store: db, OIDCKeys: ring(db)})
	unaudited := New(Config{Store: noAudit{db}, OIDCKeys: ring(noAudit{db})})
	ctx := context.Background()
	keys := func() string {
		t.Helper()
		ks, err := ok.OIDCKeys.Keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, k := range ks {
			s = append(s, k.Algorithm+"="+string(k.State))
		}
		return strings.Join(s, " ")
	}
	rp := AddClientRequest{ID: "rp", RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"openid"}, IDTokenAlg: "ES256"}

	if _, err := unaudited.CreateOIDCKey(ctx, operator, CreateOIDCKeyRequest{}); KindOf(err) != KindUnavailable || keys() != "" {
		t.Fatalf("CreateOIDCKey with the audit log unwritable: %v (%s); keys %q", err, KindOf(err), keys())
	}
	for range 2 {
		if _, err := ok.CreateOIDCKey(ctx, operator, CreateOIDCKeyRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := unaudited.RotateOIDCKeys(ctx, operator, RotateOIDCKeysRequest{Force: true}); KindOf(err) != KindUnavailable || keys() != "RS256=active RS256=next" {
		t.Fatalf("RotateOIDCKeys with the audit log unwritable: %v (%s); keys %q", err, KindOf(err), keys())
	}
	if _, err := unaudited.AddClient(ctx, operator, rp); KindOf(err) != KindUnavailable || keys() != "RS256=active RS256=next" {
		t.Fatalf("AddClient (ES256) with the audit log unwritable: %v (%s); keys %q", err, KindOf(err), keys())
	}
	if _, err := ok.RotateOIDCKeys(ctx, operator, RotateOIDCKeysRequest{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ok.AddClient(ctx, operator, rp); err != nil {
		t.Fatal(err)
	}
	if got := keys(); got != "RS256=retired RS256=active ES256=active" {
		t.Errorf("keys %s", got)
	}

	// The log: each change once, by the operator; the ES256 key the
	// client needed names the client.
	var got []string
	err := db.View(ctx, func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			if e.Actor != operator.Actor {
				t.Errorf("entry %+v: actor %q", e, e.Actor)
			}
			got = append(got, fmt.Sprintf("%s %s %s %s", e.Kind, e.Outcome, e.Fields["alg"], e.Reason))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"oidc_key_created ok RS256 ", "oidc_key_created ok RS256 ",
		"oidc_keys_rotated ok RS256 ",
		`oidc_key_created ok ES256 for client "rp"`, "client_added ok  ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

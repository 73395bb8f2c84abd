package admin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/internal/approval"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

// oidcKeyWorld is a Local with an OIDC key ring on a bbolt store and a soft
// token, and one over the same store and token whose audit appends fail.
func oidcKeyWorld(t *testing.T) (ok, unaudited *Local, db *bolt.DB, tok *softtoken.Token) {
	db = actsStore(t)
	tok = softtoken.New(softtoken.Options{})
	ring := func(s store.Store) *oidc.KeyRing {
		return &oidc.KeyRing{Store: store.Scope(s, func(tx store.Tx) oidc.KeyRingTx { return tx }), HSM: tok, IDTokenTTL: time.Hour}
	}
	return New(Config{Store: db, OIDCKeys: ring(db)}), New(Config{Store: noAudit{db}, OIDCKeys: ring(noAudit{db})}), db, tok
}

// TestOIDCKeyActsInTheirTransaction: `oidc keys create` and `rotate`, and
// the first key of an algorithm a new client needs, are committed with
// their audit entry or not at all: where the entry cannot be appended the
// key ring's change is undone, and the operator is told so.
func TestOIDCKeyActsInTheirTransaction(t *testing.T) {
	ok, unaudited, db, tok := oidcKeyWorld(t)
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
	if infos, err := tok.Keys(ctx); err != nil || len(infos) != 0 {
		t.Fatalf("key pairs in the token after the refused CreateOIDCKey: %v, %v", infos, err)
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

// TestAddClientRefusedMakesNoKey: a client refused (an invalid ID or
// redirect URI, an ID taken, the audit log unwritable) with an ID-token
// algorithm no key is active for leaves no key record and no key pair in
// the token: the client is checked before its algorithm's first key is
// made.
func TestAddClientRefusedMakesNoKey(t *testing.T) {
	l, unaudited, _, tok := oidcKeyWorld(t)
	ctx := context.Background()
	if _, err := l.AddClient(ctx, operator, AddClientRequest{ID: "taken", RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"openid"}}); err != nil {
		t.Fatal(err)
	}
	rp := func(id string, uris ...string) AddClientRequest {
		if len(uris) == 0 {
			uris = []string{"https://rp.example/cb"}
		}
		return AddClientRequest{ID: id, RedirectURIs: uris, Scopes: []string{"openid"}, IDTokenAlg: "ES256"}
	}
	tests := []struct {
		name string
		l    *Local
		req  AddClientRequest
		kind Kind
	}{
		{"a 200,000-character client ID", l, rp(strings.Repeat("a", 200_000)), KindInvalid},
		{"a relative redirect URI", l, rp("rp", "/cb"), KindInvalid},
		{"the client ID taken", l, rp("taken"), KindExists},
		{"the audit log unwritable", unaudited, rp("rp"), KindUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.l.AddClient(ctx, operator, tt.req); KindOf(err) != tt.kind {
				t.Fatalf("AddClient = %v (%s), want %s", err, KindOf(err), tt.kind)
			}
			if ks, err := l.OIDCKeys.Keys(ctx); err != nil || len(ks) != 0 {
				t.Errorf("key records after the refusal: %v, %v", ks, err)
			}
			if infos, err := tok.Keys(ctx); err != nil || len(infos) != 0 {
				t.Errorf("key pairs in the token after the refusal: %v, %v", infos, err)
			}
		})
	}
}

// TestOIDCKeyEntryClipped: the entry of a key a client's ID-token
// algorithm needs is an act's entry: every text clipped (act.Clip: the
// reason names the client as the operator sent it, the actor may be a
// long certificate subject) and the approving operator named.
func TestOIDCKeyEntryClipped(t *testing.T) {
	db := actsStore(t)
	tok := softtoken.New(softtoken.Options{})
	l := New(Config{Store: db, OIDCKeys: &oidc.KeyRing{
		Store: store.Scope(db, func(tx store.Tx) oidc.KeyRingTx { return tx }), HSM: tok, IDTokenTTL: time.Hour,
	}})
	ctx := context.Background()
	by := principal.Principal{Actor: "cert:" + strings.Repeat("CN=x,", 1000), Roles: Roles()}.Approved(approval.New("uid:1001 (second)"))
	c := &store.Client{ID: strings.Repeat("é", 100_000), Scopes: []string{"openid"}, IDTokenSignedResponseAlg: "ES256"}
	if err := l.CheckIDTokenAlg(ctx, by, c); err != nil {
		t.Fatal(err)
	}
	var got []*store.AuditEntry
	err := db.View(ctx, func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			got = append(got, e)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != store.AuditOIDCKeyCreated {
		t.Fatalf("entries %+v, want one oidc_key_created", got)
	}
	e := got[0]
	if len(e.Reason) > act.MaxAuditText || !strings.HasSuffix(e.Reason, "é…") || len(e.Actor) > act.MaxAuditText || !strings.HasSuffix(e.Actor, "…") {
		t.Errorf("reason of %d bytes (%.40q…), actor of %d bytes: want both clipped to %d", len(e.Reason), e.Reason, len(e.Actor), act.MaxAuditText)
	}
	if e.Fields["approved_by"] != "uid:1001 (second)" || e.Fields["alg"] != "ES256" {
		t.Errorf("fields %v, want approved_by and alg", e.Fields)
	}
}

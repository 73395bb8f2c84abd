package admin

import (
	"bytes"
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
	"github.com/signd/signd/store/storetest"
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

// TestAddClientRace: `client add` of one ID sent by several operators at
// once, each with an ID-token algorithm no key is active for yet: exactly
// one client is added, the others are refused as existing (KindExists),
// and no key is left for a client that was not added — no key record
// published, no key pair in the token, no oidc_key_created entry. On
// bbolt, and on etcd with each operator on a node of its own.
func TestAddClientRace(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		db := actsStore(t)
		addClientRace(t, []store.Store{db, db, db})
	})
	t.Run("etcd", func(t *testing.T) { addClientRace(t, etcdNodes(t, etcdServer(t), 3)) })
}

// addClientRace races one `client add` per store in stores, over one
// token.
func addClientRace(t *testing.T, stores []store.Store) {
	ctx := context.Background()
	tok := softtoken.New(softtoken.Options{})
	ls := make([]*Local, len(stores))
	for i, s := range stores {
		ls[i] = New(Config{Store: s, OIDCKeys: &oidc.KeyRing{
			Store: store.Scope(s, func(tx store.Tx) oidc.KeyRingTx { return tx }), HSM: tok, IDTokenTTL: time.Hour}})
	}
	algs := []string{store.JWSRS256, store.JWSPS256, store.JWSES256}
	errs := make([]error, len(algs))
	storetest.AtOnce(len(algs), func(i int) {
		_, errs[i] = ls[i].AddClient(ctx, operator, AddClientRequest{ID: "rp", RedirectURIs: []string{"https://rp.example/cb"},
			Scopes: []string{"openid"}, IDTokenAlg: algs[i]})
	})
	won := ""
	for i, err := range errs {
		switch {
		case err == nil && won != "":
			t.Fatalf("two clients rp added: %s and %s", won, algs[i])
		case err == nil:
			won = algs[i]
		case KindOf(err) != KindExists || !strings.Contains(err.Error(), `client "rp": already exists`):
			t.Errorf("AddClient rp (%s) = %v (%s), want KindExists", algs[i], err, KindOf(err))
		}
	}
	if won == "" {
		t.Fatalf("no client added: %v", errs)
	}
	l := ls[0]
	c, err := l.ShowClient(ctx, operator, "rp")
	if err != nil || c.IDTokenAlg != won {
		t.Fatalf("client rp %+v, %v; want the one with %s", c, err, won)
	}
	ks, err := l.OIDCKeys.Keys(ctx)
	if err != nil || len(ks) != 1 || ks[0].Algorithm != won || ks[0].State != store.SigningKeyActive {
		var recs []string
		for _, k := range ks {
			recs = append(recs, k.Algorithm+"="+string(k.State))
		}
		t.Fatalf("key records %v, %v; want one active %s key", recs, err, won)
	}
	infos, err := tok.Keys(ctx)
	if err != nil || len(infos) != 1 || !bytes.Equal(infos[0].ID, ks[0].KeyID) {
		t.Fatalf("key pairs in the token %v, %v; want only that of %s", infos, err, ks[0].KID)
	}
	if kinds := strings.Join(auditKinds(t, stores[0]), " "); strings.Count(kinds, "oidc_key_created/ok") != 1 || strings.Count(kinds, "client_added/ok") != 1 {
		t.Errorf("audit %s: want one key created and one client added", kinds)
	}
}

// TestAddClientOutcomeUnknown: a client and the first key of its
// algorithm, written in one transaction whose answer was lost, are
// settled together: applied, the client is added and its key kept; not
// applied, neither is stored and the key pair is destroyed.
func TestAddClientOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			base, _, db, tok := oidcKeyWorld(t)
			l := base.reconfigured(func(c *Config) { c.Store = &lostAnswer{Store: db, applied: applied} })
			_, err := l.AddClient(ctx, operator, AddClientRequest{ID: "rp", RedirectURIs: []string{"https://rp.example/cb"},
				Scopes: []string{"openid"}, IDTokenAlg: store.JWSES256})
			if (err == nil) != applied || !applied && KindOf(err) != KindUnavailable {
				t.Fatalf("AddClient = %v (%s), want success: %v", err, KindOf(err), applied)
			}
			_, cerr := base.ShowClient(ctx, operator, "rp")
			ks, kerr := base.OIDCKeys.Keys(ctx)
			infos, ierr := tok.Keys(ctx)
			if n := map[bool]int{true: 1}[applied]; (cerr == nil) != applied || kerr != nil || len(ks) != n || ierr != nil || len(infos) != n {
				t.Errorf("client %v; key records %d, %v; key pairs %d, %v; want the client and its key stored: %v", cerr, len(ks), kerr, len(infos), ierr, applied)
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
	ring := &oidc.KeyRing{Store: store.Scope(db, func(tx store.Tx) oidc.KeyRingTx { return tx }), HSM: tok, IDTokenTTL: time.Hour}
	l := New(Config{Store: db, OIDCKeys: ring})
	ctx := context.Background()
	by := principal.Principal{Actor: "cert:" + strings.Repeat("CN=x,", 1000), Roles: Roles()}.Approved(approval.New("uid:1001 (second)"))
	c := &store.Client{ID: strings.Repeat("é", 100_000), Scopes: []string{"openid"}, IDTokenSignedResponseAlg: "ES256"}
	if err := l.CheckIDTokenAlg(ctx, by, c, ring.Store.Update); err != nil {
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

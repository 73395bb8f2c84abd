package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest/backends"
)

// noAudit is a store whose write transactions cannot append to the audit
// log (as when the audit bucket is damaged): everything else works.
type noAudit struct{ store.Store }

type noAuditTx struct{ store.Tx }

func (noAuditTx) AppendAudit(*store.AuditEntry) error {
	return store.ErrUnavailable
}

func (s noAudit) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.Store.Update(ctx, func(tx store.Tx) error { return fn(noAuditTx{tx}) })
}

// reconfigured is a Local over l's Config changed by edit: a Local's
// subjects are built once, by New.
func (l *Local) reconfigured(edit func(*Config)) *Local {
	c := l.cfg
	edit(&c)
	return New(c)
}

func actsStore(t *testing.T) *bolt.DB {
	t.Helper()
	return backends.Bolt(t, bolt.Options{})
}

func auditKinds(t *testing.T, db store.Store) []string {
	t.Helper()
	var out []string
	err := db.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			out = append(out, string(e.Kind)+"/"+e.Outcome)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestActEntryInTheChangesTransaction: when the entry cannot be appended
// the change is not committed either, and a read is refused; the store
// itself still takes nothing.
func TestActEntryInTheChangesTransaction(t *testing.T) {
	db := actsStore(t)
	hasher, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	l := New(Config{Store: noAudit{db}, Hasher: hasher, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	ctx := context.Background()

	_, err = l.AddUser(ctx, operator, AddUserRequest{Username: "alice", Password: "correct horse"})
	if KindOf(err) != KindUnavailable {
		t.Fatalf("AddUser with the audit log unwritable: %v (%s), want unavailable", err, KindOf(err))
	}
	if _, err := New(Config{Store: db}).User(ctx, "alice"); KindOf(err) != KindNotFound {
		t.Errorf("alice was stored without her audit entry: %v", err)
	}
	_, err = l.ListUsers(ctx, operator)
	if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "ListUsers refused: the audit log cannot be written") {
		t.Errorf("ListUsers with the audit log unwritable: %v, want refused", err)
	}
	if got := auditKinds(t, db); len(got) != 0 {
		t.Errorf("audit %v", got)
	}
	// Neither the act nor its failure is in the audit log: the log says
	// both, at ERROR, with the actor.
	if n := strings.Count(logs.String(), `"msg":"admin act failed, not audited: the store cannot write"`); n != 2 ||
		!strings.Contains(logs.String(), `"actor":"uid:1000 (operator)"`) || strings.Contains(logs.String(), "correct horse") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// TestActRefusedAudited: a refusal by validation after a change that was
// done is one more entry, of the same kind, outcome refused.
func TestActRefusedAudited(t *testing.T) {
	l, db := removalWorld(t, &destroyOnly{})
	_, err := l.SetCredentialAuth(context.Background(), operator, SetCredentialAuthRequest{ID: "c1", AuthMode: "explicit", Multisign: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.SetCredentialAuth(context.Background(), operator, SetCredentialAuthRequest{ID: "c1"})
	if KindOf(err) != KindInvalid {
		t.Fatalf("nothing to change: %v", err)
	}
	if got, want := strings.Join(auditKinds(t, db), " "), "credential_auth/ok credential_auth/refused"; got != want {
		t.Errorf("audit %s, want %s", got, want)
	}
}

// TestAuditExportFilters: each filter alone and together, and every
// malformed filter refused (and the refusal audited).
func TestAuditExportFilters(t *testing.T) {
	db := actsStore(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	entries := []store.AuditEntry{
		{Kind: store.AuditUserAdded, Actor: "uid:1001 (alice)", Target: "user:bob", User: "bob", Outcome: store.AuditOK},
		{Kind: store.AuditUserPasswordSet, Actor: "uid:1002 (carol)", Target: "user:bob", User: "bob", Outcome: store.AuditOK},
		{Kind: store.AuditCredentialEnrolled, Actor: "uid:1001 (alice)", Target: "credential:c1", User: "bob", Credential: "c1", Outcome: "pending"},
		{Kind: store.AuditSignHash, User: "bob", Client: "rp", Credential: "c1", Outcome: store.AuditGranted},
		{Kind: store.AuditCredentialRemoved, Actor: "uid:10011 (dave)", Target: "credential:c1", User: "bob", Credential: "c1", Outcome: store.AuditOK},
	}
	for i := range entries {
		entries[i].Time = t0.Add(time.Duration(i) * time.Hour)
		err := db.Update(context.Background(), func(tx store.Tx) error { return tx.AppendAudit(&entries[i]) })
		if err != nil {
			t.Fatal(err)
		}
	}
	// The exports run at t0+10h, after every entry above: their own
	// admin_read entries are left out by Until.
	l := New(Config{Store: db, Now: func() time.Time { return t0.Add(10 * time.Hour) }})
	end := t0.Add(9 * time.Hour)
	cases := []struct {
		name string
		req  AuditExportRequest
		want string // seqs exported
		err  string
	}{
		{name: "all_until", req: AuditExportRequest{Until: end}, want: "1 2 3 4 5"},
		{name: "since_until", req: AuditExportRequest{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)}, want: "2 3"},
		{name: "kinds", req: AuditExportRequest{Until: end, Kinds: []string{"user_password_set", "credential_removed"}}, want: "2 5"},
		{name: "actor_substring", req: AuditExportRequest{Until: end, Actor: "uid:1001"}, want: "1 3 5"},
		{name: "actor_uid_exactly", req: AuditExportRequest{Until: end, Actor: "uid:1001 ("}, want: "1 3"},
		{name: "target_user", req: AuditExportRequest{Until: end, Target: "user:bob"}, want: "1 2 3 4 5"},
		{name: "target_credential_with_protocol", req: AuditExportRequest{Until: end, Target: "credential:c1"}, want: "3 4 5"},
		{name: "target_client", req: AuditExportRequest{Until: end, Target: "client:rp"}, want: "4"},
		{name: "target_unknown_prefix", req: AuditExportRequest{Until: end, Target: "c1"}, want: ""},
		{name: "target_empty_name", req: AuditExportRequest{Until: end, Target: "user:"}, want: ""},
		{name: "all_filters", req: AuditExportRequest{Since: t0, Until: end, Kinds: []string{"credential_enrolled", "signHash"}, Actor: "alice", Target: "credential:c1"}, want: "3"},
		{name: "reads_audited", req: AuditExportRequest{Kinds: []string{"admin_read"}, Actor: "operator"}, want: "6 7 8 9 10 11 12 13 14 15 16 17"},

		{name: "unknown_kind", req: AuditExportRequest{Kinds: []string{"user_added", "user_addded"}}, err: `unknown audit kind "user_addded" (kinds: account_action, admin_read,`},
		{name: "until_before_since", req: AuditExportRequest{Since: t0, Until: t0.Add(-time.Second)}, err: "until (2026-03-01T11:59:59Z) must be after since (2026-03-01T12:00:00Z)"},
		{name: "until_equals_since", req: AuditExportRequest{Since: t0, Until: t0}, err: "must be after since"},
		{name: "oversized_actor", req: AuditExportRequest{Actor: strings.Repeat("a", 257)}, err: "actor must be at most 256 printable characters"},
		{name: "control_in_target", req: AuditExportRequest{Target: "user:a\nb"}, err: "target must be at most 256 printable characters"},
		{name: "too_many_kinds", req: AuditExportRequest{Kinds: make([]string, 257)}, err: "at most 256 kinds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(auditKinds(t, db))
			var w bytes.Buffer
			err := l.AuditExport(context.Background(), operator, tc.req, &w)
			if got := len(auditKinds(t, db)) - before; got != 1 {
				t.Errorf("%d entries appended, want 1", got)
			}
			if tc.err != "" {
				if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), tc.err) || w.Len() != 0 {
					t.Fatalf("err = %v (%s), output %q; want invalid %q", err, KindOf(err), w.String(), tc.err)
				}
				if k := auditKinds(t, db); k[len(k)-1] != "admin_read/refused" {
					t.Errorf("the refusal is audited as %s", k[len(k)-1])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var seqs []string
			for _, e := range logtest.Lines[struct {
				Seq json.Number `json:"seq"`
			}](t, w.String()) {
				seqs = append(seqs, e.Seq.String())
			}
			if got := strings.Join(seqs, " "); got != tc.want {
				t.Errorf("exported %q, want %q", got, tc.want)
			}
		})
	}
	// A filter malformed in JSON never reaches the service.
	o, _ := Lookup("AuditExport")
	if _, err := o.Call(context.Background(), l, operator, []byte(`{"kinds":"user_added"}`)); KindOf(err) != KindInvalid {
		t.Errorf("kinds as a string: %v", err)
	}
	var ae *Error
	if _, err := o.Call(context.Background(), l, operator, []byte(`{"until":"yesterday"}`)); !errors.As(err, &ae) || ae.Kind != KindInvalid {
		t.Errorf("until not a time: %v", err)
	}
}

// TestActEntryOfHostileInput: a refusal of a request naming invalid UTF-8
// or a huge name is still audited, its texts made valid and bounded.
func TestActEntryOfHostileInput(t *testing.T) {
	db := actsStore(t)
	l := New(Config{Store: db})
	for _, name := range []string{"al\xffice", strings.Repeat("é", 5000)} {
		if _, err := l.RemoveUser(context.Background(), operator, name); KindOf(err) != KindNotFound {
			t.Fatalf("RemoveUser: %v", err)
		}
	}
	var got []store.AuditEntry
	err := db.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error { got = append(got, *e); return nil })
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("%d entries, want 2: %v", len(got), err)
	}
	if got[0].Target != "user:al\uFFFDice" || got[0].Outcome != store.AuditRefused {
		t.Errorf("entry %+v", got[0])
	}
	if len(got[1].Target) > act.MaxAuditText || !strings.HasSuffix(got[1].Target, "é…") || len(got[1].Reason) > act.MaxAuditText {
		t.Errorf("target of %d bytes %q…", len(got[1].Target), got[1].Target[:20])
	}
}

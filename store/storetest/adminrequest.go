package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Admin requests (dual control).

func newAdminRequest(id string, created time.Time) *store.AdminRequest {
	return &store.AdminRequest{
		ID: id, Op: "RemoveCredential", Request: json.RawMessage(`{"Name":"cred-1"}`),
		Actor: "uid:1001 (alice)", Party: "uid:1001", Roles: []string{"security_officer"},
		CreatedAt: created, ExpiresAt: created.Add(24 * time.Hour),
	}
}

func adminRequests(t *testing.T, s store.Store) []store.AdminRequest {
	t.Helper()
	var rs []store.AdminRequest
	view(t, s, func(tx store.Tx) (err error) { rs, err = tx.AdminRequests(); return err })
	return rs
}

// auditEntries returns the decoded audit log.
func auditEntries(t *testing.T, s store.Store) []store.AuditEntry {
	t.Helper()
	var es []store.AuditEntry
	view(t, s, func(tx store.Tx) error {
		return tx.AuditRecords(1, func(_ uint64, raw []byte) error {
			e, err := store.DecodeAuditEntry(raw)
			if err != nil {
				return err
			}
			es = append(es, *e)
			return nil
		})
	})
	return es
}

func testAdminRequests(t *testing.T, s store.Store) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 3600))
	if rs := adminRequests(t, s); len(rs) != 0 {
		t.Fatalf("empty store has admin requests %v", rs)
	}
	// Created out of order: listed oldest first.
	b := newAdminRequest("req-b", t0.Add(time.Minute))
	b.Party, b.Certs = "cert-subject:CN=officer", [][]byte{{0x30, 1, 2}, {0x30, 3}} // kept as given
	a := newAdminRequest("req-a", t0)
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateAdminRequest(b); err != nil {
			return err
		}
		return tx.CreateAdminRequest(a)
	})
	rs := adminRequests(t, s)
	if len(rs) != 2 || rs[0].ID != "req-a" || rs[1].ID != "req-b" {
		t.Fatalf("AdminRequests = %+v, want req-a, req-b", rs)
	}
	var got *store.AdminRequest
	view(t, s, func(tx store.Tx) (err error) { got, err = tx.AdminRequest("req-b"); return err })
	if !got.CreatedAt.Equal(b.CreatedAt) || !got.ExpiresAt.Equal(b.ExpiresAt) {
		t.Errorf("times = %v, %v; want %v, %v", got.CreatedAt, got.ExpiresAt, b.CreatedAt, b.ExpiresAt)
	}
	got.CreatedAt, got.ExpiresAt = b.CreatedAt, b.ExpiresAt
	if !reflect.DeepEqual(got, b) {
		t.Errorf("AdminRequest = %+v, want %+v", got, b)
	}
	// A copy: changing it changes nothing stored.
	got.Request[2] = 'X'
	got.Roles[0] = "auditor"
	view(t, s, func(tx store.Tx) (err error) { got, err = tx.AdminRequest("req-b"); return err })
	if string(got.Request) != string(b.Request) || got.Roles[0] != "security_officer" {
		t.Errorf("stored request changed through a copy: %+v", got)
	}

	errs := []struct {
		name string
		fn   func(tx store.Tx) error
		want error
	}{
		{"create twice", func(tx store.Tx) error { return tx.CreateAdminRequest(newAdminRequest("req-a", t0)) }, store.ErrAlreadyExists},
		{"get missing", func(tx store.Tx) error { _, err := tx.AdminRequest("req-x"); return err }, store.ErrNotFound},
		{"delete missing", func(tx store.Tx) error { return tx.DeleteAdminRequest("req-x") }, store.ErrNotFound},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Update(context.Background(), tt.fn); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	for name, fn := range map[string]func(tx store.Tx) error{
		"CreateAdminRequest": func(tx store.Tx) error { return tx.CreateAdminRequest(newAdminRequest("req-c", t0)) },
		"DeleteAdminRequest": func(tx store.Tx) error { return tx.DeleteAdminRequest("req-a") },
	} {
		if err := s.View(context.Background(), fn); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("%s in View = %v, want ErrReadOnly", name, err)
		}
	}
	updateRolledBack(t, s, func(tx store.Tx) error { return tx.DeleteAdminRequest("req-a") })
	update(t, s, func(tx store.Tx) error { return tx.DeleteAdminRequest("req-a") })
	if rs := adminRequests(t, s); len(rs) != 1 || rs[0].ID != "req-b" {
		t.Errorf("after delete: %+v", rs)
	}
}

func testInvalidAdminRequests(t *testing.T, s store.Store) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	bad := map[string]func(*store.AdminRequest){
		"empty ID":         func(r *store.AdminRequest) { r.ID = "" },
		"ID with a space":  func(r *store.AdminRequest) { r.ID = "a b" },
		"empty op":         func(r *store.AdminRequest) { r.Op = "" },
		"empty request":    func(r *store.AdminRequest) { r.Request = nil },
		"request not JSON": func(r *store.AdminRequest) { r.Request = json.RawMessage(`{"Name":`) },
		"two JSON values":  func(r *store.AdminRequest) { r.Request = json.RawMessage(`{} {}`) },
		"oversized request": func(r *store.AdminRequest) {
			r.Request = json.RawMessage(`"` + strings.Repeat("a", store.MaxAdminRequestSize) + `"`)
		},
		"no actor":           func(r *store.AdminRequest) { r.Actor = "" },
		"no party":           func(r *store.AdminRequest) { r.Party = "" },
		"actor control char": func(r *store.AdminRequest) { r.Actor = "uid:1\n(x)" },
		"party invalid UTF8": func(r *store.AdminRequest) { r.Party = "uid:\xff" },
		"role with a space":  func(r *store.AdminRequest) { r.Roles = []string{"security officer"} },
		"too many roles":     func(r *store.AdminRequest) { r.Roles = make([]string, 17) },
		"too many certs":     func(r *store.AdminRequest) { r.Certs = slices.Repeat([][]byte{{0x30}}, 9) },
		"empty cert":         func(r *store.AdminRequest) { r.Certs = [][]byte{{0x30}, nil} },
		"oversized cert":     func(r *store.AdminRequest) { r.Certs = [][]byte{make([]byte, 16<<10+1)} },
		"no creation time":   func(r *store.AdminRequest) { r.CreatedAt = time.Time{} },
		"expires at creation": func(r *store.AdminRequest) {
			r.ExpiresAt = r.CreatedAt
		},
	}
	wantInvalid(t, s, bad, func(string) *store.AdminRequest { return newAdminRequest("req", t0) },
		func(tx store.Tx, r *store.AdminRequest) error { return tx.CreateAdminRequest(r) })
	if rs := adminRequests(t, s); len(rs) != 0 {
		t.Errorf("invalid requests were stored: %+v", rs)
	}
}

// testAdminRequestLimit fills the store with MaxAdminRequests requests:
// one more is refused, and one decided makes room again.
func testAdminRequestLimit(t *testing.T, s store.Store) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < store.MaxAdminRequests; i += 100 {
		update(t, s, func(tx store.Tx) error {
			for j := i; j < i+100; j++ {
				if err := tx.CreateAdminRequest(newAdminRequest(fmt.Sprintf("req-%04d", j), t0)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateAdminRequest(newAdminRequest("one-more", t0)) })
	wantErr(t, "one request over the limit", err, store.ErrInvalid)
	update(t, s, func(tx store.Tx) error {
		if err := tx.DeleteAdminRequest("req-0000"); err != nil {
			return err
		}
		return tx.CreateAdminRequest(newAdminRequest("one-more", t0))
	})
}

// testAdminRequestSweep: SweepExpired removes the admin requests that
// expired, after the other kinds and within the limit, and appends a
// pending_expired audit entry for each in the same transaction.
func testAdminRequestSweep(t *testing.T, s store.Store) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	update(t, s, func(tx store.Tx) error {
		for i := -1; i < 3; i++ { // request i expired i seconds ago; req--1 is live
			r := newAdminRequest(fmt.Sprintf("req-%d", i), now.Add(-24*time.Hour))
			r.ExpiresAt = now.Add(-time.Duration(i) * time.Second)
			if err := tx.CreateAdminRequest(r); err != nil {
				return err
			}
		}
		return tx.CreateToken(newToken("token-0", store.TokenAccess, "", now.Add(-time.Hour)))
	})
	// A rolled-back sweep removes nothing and audits nothing.
	updateRolledBack(t, s, func(tx store.Tx) error { _, err := tx.SweepExpired(now, 10); return err })
	if n := len(adminRequests(t, s)); n != 4 || len(auditEntries(t, s)) != 0 {
		t.Fatalf("after a rolled-back sweep: %d requests, audit %v", n, auditEntries(t, s))
	}
	var n store.Swept
	update(t, s, func(tx store.Tx) (err error) { n, err = tx.SweepExpired(now, 2); return err })
	if want := (store.Swept{Tokens: 1, AdminRequests: 1}); n != want || n.Total() != 2 {
		t.Errorf("first sweep = %+v, want %+v", n, want)
	}
	update(t, s, func(tx store.Tx) (err error) { n, err = tx.SweepExpired(now, 10); return err })
	if want := (store.Swept{AdminRequests: 2}); n != want {
		t.Errorf("second sweep = %+v, want %+v", n, want)
	}
	if rs := adminRequests(t, s); len(rs) != 1 || rs[0].ID != "req--1" {
		t.Errorf("left after the sweeps: %+v, want req--1", rs)
	}
	es := auditEntries(t, s)
	var ids []string
	for _, e := range es {
		if e.Kind != store.AuditPendingExpired || e.Actor != "signd" || e.Outcome != store.AuditOK ||
			e.Fields["op"] != "RemoveCredential" || e.Fields["requested_by"] != "uid:1001 (alice)" || !e.Time.Equal(now) {
			t.Errorf("audit entry %+v", e)
		}
		ids = append(ids, e.Fields["id"])
	}
	// Earliest expiry first.
	if want := []string{"req-2", "req-1", "req-0"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("expired %v, want %v", ids, want)
	}
	if got, _ := verifyAudit(t, s); got != 3 {
		t.Errorf("VerifyAudit counted %d, want 3", got)
	}
}

// testConcurrentAdminDecide: of many transactions deciding the same admin
// request at once, exactly one deletes it; the others find it gone.
func testConcurrentAdminDecide(t *testing.T, s store.Store) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	update(t, s, func(tx store.Tx) error { return tx.CreateAdminRequest(newAdminRequest("req", t0)) })
	errs := make([]error, 16)
	AtOnce(len(errs), func(i int) {
		errs[i] = s.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteAdminRequest("req") })
	})
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("a losing decision: %v, want ErrNotFound", err)
		}
	}
	if won != 1 {
		t.Errorf("%d transactions decided the request, want exactly 1", won)
	}
}

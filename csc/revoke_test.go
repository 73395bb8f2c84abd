package csc_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// adminBetween runs an admin action once, after the bearer middleware let
// the request through and before the signHash transaction starts: the
// window in which only the SAD check itself can notice the change.
type adminBetween struct {
	envStore
	once   sync.Once
	action func()
}

func (s *adminBetween) Batch(ctx context.Context, fn func(csc.Tx) error) error {
	s.once.Do(s.action)
	return s.envStore.Batch(ctx, fn)
}

// TestSADRefusedAfterAdminAction: a client removed, a user disabled or a
// credential disabled between the bearer check and the SAD consumption —
// and without the revocation that normally comes with it, as if its index
// had missed the SAD — still stops the signature.
func TestSADRefusedAfterAdminAction(t *testing.T) {
	cases := []struct {
		name   string
		action func(tx store.Tx, cred string) error
		desc   string // error_description
		reason string // audit reason
		burned bool   // the SAD is consumed by the refusal
	}{
		{
			name:   "client_removed",
			action: func(tx store.Tx, _ string) error { return tx.DeleteClient("rp1") },
			desc:   "Invalid parameter SAD", reason: "client removed (burned)", burned: true,
		},
		{
			name: "user_disabled",
			action: func(tx store.Tx, _ string) error {
				return storetest.EditUser(tx, "alice", func(u *store.User) { u.Status = store.UserDisabled })
			},
			desc: "Invalid parameter SAD", reason: "user removed or disabled (burned)", burned: true,
		},
		{
			name: "credential_disabled",
			action: func(tx store.Tx, cred string) error {
				c, err := tx.Credential(cred)
				if err != nil {
					return err
				}
				c.Status = store.CredentialDisabled
				return tx.PutCredential(c)
			},
			desc: "The credential identified by credentialID is disabled", reason: "credential disabled",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			bearer, cred := e.alice()
			d := digest("signed after the admin acted")
			sad := e.sad("alice", "rp1", cred, time.Minute, d)
			e.h.Store = &adminBetween{envStore: cscStore(e.db), action: func() {
				e.update(func(tx store.Tx) error { return tc.action(tx, cred) })
			}}
			wantError(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)),
				http.StatusBadRequest, "invalid_request", tc.desc)
			if got := e.sadExists(sad); got == tc.burned {
				t.Errorf("SAD stored after the refusal: %v, want %v", got, !tc.burned)
			}
			entries := e.auditEntries()
			last := entries[len(entries)-1]
			if last.Kind != store.AuditSignHash || last.Outcome != store.AuditRefused || last.Reason != tc.reason {
				t.Errorf("audit entry %s/%s %q, want signHash/refused %q", last.Kind, last.Outcome, last.Reason, tc.reason)
			}
			if tc.burned && e.metrics.get("sad", "refused/revoked") != 1 {
				t.Errorf("SAD metrics %v, want one refused/revoked", e.metrics.sad)
			}
		})
	}
}

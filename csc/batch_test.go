package csc_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/hsm/hsmtest/softtoken"
)

// TestSignHashBatchOneSignerCall: the hashes of one request are signed in
// one Signer call (one pooled HSM session), the signatures come back in
// request order.
func TestSignHashBatchOneSignerCall(t *testing.T) {
	signer := newWatchedSigner()
	e := newEnv(t, withSigner(signer))
	bearer, cred := e.alice()
	ds := make([][]byte, 5)
	for i := range ds {
		ds[i] = digest(fmt.Sprint("batch ", i))
	}
	sad := e.sad("alice", "rp1", cred, time.Minute, ds...)
	r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, ds...))
	sigs := signatures(t, r)
	if len(sigs) != len(ds) {
		t.Fatalf("%d signatures for %d hashes", len(sigs), len(ds))
	}
	for i, sig := range sigs {
		e.verify(cred, ds[i], sig)
	}
	if n := signer.calls.Load(); n != 1 {
		t.Errorf("%d Signer calls for one request of %d hashes, want 1", n, len(ds))
	}
}

// TestSignHashBatchFailureAt: the HSM fails at signature k of a batch of
// five. Before the first signature nothing was made: the SAD is given back
// and signs the whole batch afterwards. After it the SAD stays spent and
// the grant is followed by a "failed" entry; no signature leaves.
func TestSignHashBatchFailureAt(t *testing.T) {
	const n = 5
	for _, k := range []int{0, 1, n - 1} {
		t.Run(fmt.Sprintf("fails at %d of %d", k, n), func(t *testing.T) {
			tok, e, bearer, cred := outageEnv(t)
			ds := make([][]byte, n)
			for i := range ds {
				ds[i] = digest(fmt.Sprint(t.Name(), i))
			}
			sad := e.sad("alice", "rp1", cred, time.Minute, ds...)
			var signs atomic.Int32
			tok.Hook(func(op string) error {
				if op == softtoken.OpSignDigest && signs.Add(1) == int32(k+1) {
					return errFunctionFailed
				}
				return nil
			})
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, ds...))
			tok.Hook(nil)
			if r.status != http.StatusInternalServerError || r.str("error") != "server_error" || r.body["signatures"] != nil {
				t.Fatalf("signHash failing at signature %d: %d %s", k, r.status, r.raw)
			}
			got := auditSummary(e.auditEntries())
			if k == 0 {
				if !e.sadExists(sad) || len(got) != 2 || got[1] != "restored/1/not signed: signing failed; SAD restored" {
					t.Fatalf("no signature made: SAD exists %v, audit log %q; want it restored", e.sadExists(sad), got)
				}
				r = e.call("signatures/signHash", bearer, signHashBody(cred, sad, ds...))
				for i, sig := range signatures(t, r) {
					e.verify(cred, ds[i], sig)
				}
				return
			}
			if e.sadExists(sad) {
				t.Fatal("SAD given back although signatures of the batch were made")
			}
			if len(got) != 2 || got[1] != "failed/1/signing failed" {
				t.Fatalf("audit log %q, want granted then failed", got)
			}
		})
	}
}

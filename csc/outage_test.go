package csc_test

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// Faults of the software token, named after the PKCS#11 failures of the
// real token they stand for; hsm maps each return code to these errors
// (hsm's outage and recovery tests).
var (
	errDeviceError    = fmt.Errorf("C_Sign: CKR_DEVICE_ERROR: %w", hsm.ErrTokenUnavailable)
	errFunctionFailed = errors.New("C_Sign: CKR_FUNCTION_FAILED")
)

// faultyToken returns the shared software token for a test that injects
// faults into it; they are cleared when the test ends. The real token's
// failures through the daemon are cmd/signd's TestHSMOutageThroughDaemon.
func faultyToken(t *testing.T) *softtoken.Token {
	t.Helper()
	t.Cleanup(token.Clear)
	return token
}

// outageEnv is an environment on faultyToken with a bearer token of alice
// from rp1 and an enabled credential of hers on keyA.
func outageEnv(t *testing.T) (tok *softtoken.Token, e *env, bearer, cred string) {
	t.Helper()
	tok = faultyToken(t)
	e = newEnv(t, withSigner(tok))
	bearer, cred = e.alice()
	return tok, e, bearer, cred
}

func waitAvailable(t *testing.T, tok *softtoken.Token) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !tok.Available() {
		if time.Now().After(deadline) {
			t.Fatal("token not available again within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sadExpiry returns the stored expiry of the SAD v.
func (e *env) sadExpiry(v string) time.Time {
	e.t.Helper()
	var exp time.Time
	e.view(func(tx store.Tx) error {
		tok, err := tx.Token(store.Fingerprint(v))
		if err != nil {
			return err
		}
		exp = tok.ExpiresAt
		return nil
	})
	return exp
}

// auditSummary renders entries as "outcome/ref/reason" in order, with refs
// relative to the first entry given.
func auditSummary(entries []*store.AuditEntry) []string {
	out := make([]string, len(entries))
	for i, a := range entries {
		ref := "-"
		if a.Ref != 0 {
			ref = fmt.Sprint(a.Ref)
		}
		out[i] = a.Outcome + "/" + ref + "/" + a.Reason
	}
	return out
}

// TestSignHashFailureAfterConsumeRestoresSAD: the HSM fails after the SAD
// was consumed, before any signature was made. The SAD is given back with
// its original expiry in a compensating transaction (a new audit entry
// "restored" referring to the grant), the client gets the right error,
// and the same SAD signs once the HSM is back. The audit chain verifies
// (newEnv's cleanup).
func TestSignHashFailureAfterConsumeRestoresSAD(t *testing.T) {
	cases := []struct {
		name   string
		inject func(tok *softtoken.Token)
		status int
		errc   string
		reason string
	}{
		{"C_Sign device error", func(tok *softtoken.Token) { tok.FailOnce(softtoken.OpSignDigest, errDeviceError) },
			http.StatusServiceUnavailable, "temporarily_unavailable", "not signed: device error; SAD restored"},
		// The key is known, so the check before the consume passes; the
		// signature finds the token gone.
		{"token removed", func(tok *softtoken.Token) { tok.SetGone(true) },
			http.StatusServiceUnavailable, "temporarily_unavailable", "not signed: device error; SAD restored"},
		{"C_Sign function failed", func(tok *softtoken.Token) { tok.FailOnce(softtoken.OpSignDigest, errFunctionFailed) },
			http.StatusInternalServerError, "server_error", "not signed: signing failed; SAD restored"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, e, bearer, cred := outageEnv(t)
			d := digest(tc.name)
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			expiry := e.sadExpiry(sad)

			tc.inject(tok)
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			if r.status != tc.status || r.str("error") != tc.errc {
				t.Fatalf("signHash with an injected %s: %d %s", tc.name, r.status, r.raw)
			}
			if ra := r.header.Get("Retry-After"); (tc.status == http.StatusServiceUnavailable) != (ra == "5") {
				t.Errorf("%d with Retry-After %q", r.status, ra)
			}
			if !e.sadExists(sad) {
				t.Fatal("the SAD of a request that made no signature is gone")
			}
			if got := e.sadExpiry(sad); !got.Equal(expiry) {
				t.Errorf("restored SAD expires %v, originally %v", got, expiry)
			}
			entries := e.auditEntries()
			if len(entries) != 2 || entries[0].Outcome != store.AuditGranted || entries[1].Outcome != store.AuditRestored ||
				entries[1].Ref != entries[0].Seq || entries[1].Reason != tc.reason || entries[1].Hashes[0] != hexOf(d) {
				t.Fatalf("audit log %q, want granted then restored (%s) referring to it", auditSummary(entries), tc.reason)
			}
			if e.metrics.get("sad", "restored/") != 1 || e.metrics.get("sad", "consumed/") != 1 {
				t.Errorf("SAD metrics %v", e.metrics.sad)
			}
			e.view(func(tx store.Tx) error {
				n, _, err := store.VerifyAudit(tx)
				if err == nil && n != 2 {
					err = fmt.Errorf("%d entries verified, want 2", n)
				}
				return err
			})

			tok.SetGone(false) // the token is back (the real one reconnects)
			waitAvailable(t, tok)
			r = e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			e.verify(cred, d, signatures(t, r)[0])
			r = e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			wantError(t, r, http.StatusBadRequest, "invalid_request", "Invalid parameter SAD")
			if got := auditSummary(e.auditEntries()); len(got) != 4 || got[2] != "granted/-/" {
				t.Errorf("audit log after the retry: %q", got)
			}
		})
	}
}

// TestSignHashOutageKeepsSAD: while the HSM is unavailable a signHash is
// refused with 503 and Retry-After before its SAD is looked at, and the
// same SAD signs once the token is back. No /readyz is involved.
func TestSignHashOutageKeepsSAD(t *testing.T) {
	tok, e, bearer, cred := outageEnv(t)
	if _, err := tok.SignDigest(context.Background(), keyA.ID, crypto.SHA256, digest("warm")); err != nil {
		t.Fatal(err) // the real token caches the key handle here
	}

	tok.SetGone(true)
	sads := map[string][]byte{}
	for i := range 3 {
		d := digest(fmt.Sprint("outage ", i))
		sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
		sads[sad] = d
		r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
		wantError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable", "The signing service is temporarily unavailable, try again later")
		if r.header.Get("Retry-After") != "5" {
			t.Errorf("503 without Retry-After: %v", r.header)
		}
		if !e.sadExists(sad) {
			t.Fatalf("request %d: the SAD presented during the outage is gone", i)
		}
	}
	// The first request found out (its preflight passed on the cached
	// handle and the open session; signing failed, the SAD was given
	// back); the others were refused before consuming anything.
	got := auditSummary(e.auditEntries())
	want := []string{"granted/-/", "restored/1/not signed: device error; SAD restored",
		"refused/-/signing device busy or unavailable (SAD not consumed)",
		"refused/-/signing device busy or unavailable (SAD not consumed)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit log %q\nwant %q", got, want)
	}
	if n := e.metrics.get("signHash", "unavailable"); n != 3 {
		t.Errorf("%d signHash counted unavailable, want 3", n)
	}

	tok.SetGone(false)
	waitAvailable(t, tok)
	for sad, d := range sads {
		r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
		e.verify(cred, d, signatures(t, r)[0])
	}
}

// signHashLostKey asks for alice's signature of doc's digest, with a SAD
// for it, by a credential of hers whose key is keyA's but for its CKA_ID,
// id, which is not on the token; it returns the SAD and the answer.
func (e *env) signHashLostKey(bearer, id, doc string) (string, response) {
	lost := *keyA
	lost.ID = []byte(id)
	cred := e.credential(valid("alice", &lost))
	d := digest(doc)
	sad := e.sad("alice", "rp1", cred, time.Minute, d)
	return sad, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
}

// TestSignHashKeyGone: a credential whose key is not on the token (the HSM
// is fine) is refused as disabled before its SAD is consumed; neither 500
// nor an outage.
func TestSignHashKeyGone(t *testing.T) {
	e := newEnv(t)
	bearer := e.accessToken("alice", "rp1")
	sad, r := e.signHashLostKey(bearer, "not-on-the-token", "key gone")
	wantError(t, r, http.StatusBadRequest, "invalid_request", "The credential identified by credentialID is disabled")
	if !e.sadExists(sad) {
		t.Error("SAD consumed for a credential whose key is gone")
	}
	if got := auditSummary(e.auditEntries()); len(got) != 1 || got[0] != "refused/-/signing key unusable in the HSM (SAD not consumed)" {
		t.Errorf("audit log %q", got)
	}
	if !token.Available() {
		t.Error("a missing key made the token unavailable")
	}
}

// TestSignHashKeyMissingOnNode: on a node of a cluster (Clustered set:
// the HSM's error answers KeyMissing), a credential whose key is not on this node's token is this
// node's fault: 503 temporarily_unavailable naming the node, with
// Retry-After, the SAD untouched for the client's retry at another node,
// the refusal audited; other credentials still sign.
func TestSignHashKeyMissingOnNode(t *testing.T) {
	e := newEnv(t, func(h *csc.Handler) { h.Clustered = true })
	bearer, here := e.alice()
	sad, r := e.signHashLostKey(bearer, "on-another-node", "key on another node")
	wantError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable", "The signing key is not available on this node, try again later")
	if ra := r.header.Get("Retry-After"); ra != "5" {
		t.Errorf("Retry-After %q, want 5", ra)
	}
	if !e.sadExists(sad) {
		t.Error("SAD consumed for a credential whose key is on another node")
	}
	if got := auditSummary(e.auditEntries()); len(got) != 1 || got[0] != "refused/-/signing key not available on this node (SAD not consumed)" {
		t.Errorf("audit log %q", got)
	}
	if n := e.metrics.get("signHash", "unavailable"); n != 1 {
		t.Errorf("%d signHash counted unavailable, want 1", n)
	}
	d2 := digest("key on this node")
	r = e.call("signatures/signHash", bearer, signHashBody(here, e.sad("alice", "rp1", here, time.Minute, d2), d2))
	e.verify(here, d2, signatures(t, r)[0])
}

// TestSignHashPartialFailureKeepsSADSpent: with two hashes, the HSM fails
// on the second after signing the first. A signature was made, so the SAD
// stays spent.
func TestSignHashPartialFailureKeepsSADSpent(t *testing.T) {
	tok, e, bearer, cred := outageEnv(t)
	d1, d2 := digest("first"), digest("second")
	sad := e.sad("alice", "rp1", cred, time.Minute, d1, d2)
	var signs atomic.Int32
	tok.Hook(func(op string) error {
		if op == softtoken.OpSignDigest && signs.Add(1) == 2 {
			return errDeviceError
		}
		return nil
	})
	r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d1, d2))
	wantError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable", "The signing service is temporarily unavailable, try again later")
	if e.sadExists(sad) {
		t.Error("SAD given back although a signature was made")
	}
	if got := auditSummary(e.auditEntries()); len(got) != 2 || got[1] != "failed/1/signing device busy or unavailable" {
		t.Errorf("audit log %q", got)
	}
}

// TestSignHashRestoreNeverDoubleSpends: twelve requests present one SAD at
// once while the HSM fails the first signature; they keep presenting it
// until one signs. Exactly one signature is ever returned, and every grant
// the audit log holds is either that signature or compensated by a
// "restored" entry.
func TestSignHashRestoreNeverDoubleSpends(t *testing.T) {
	tok, e, bearer, cred := outageEnv(t)
	d := digest("one signature")
	sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
	tok.FailOnce(softtoken.OpSignDigest, errDeviceError)

	var signed atomic.Int32
	var mu sync.Mutex
	statuses := map[int]int{}
	storetest.AtOnce(12, func(int) {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && signed.Load() == 0 {
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
			if r.status == http.StatusOK {
				e.verify(cred, d, signatures(t, r)[0])
				signed.Add(1)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	if n := signed.Load(); n != 1 {
		t.Fatalf("%d signatures for one SAD (statuses %v)", n, statuses)
	}
	outcomes := e.auditOutcomes()
	granted, restored := outcomes[store.AuditGranted], outcomes[store.AuditRestored]
	if restored < 1 || granted-restored != 1 {
		t.Errorf("%d grants, %d restored: want exactly one uncompensated grant (statuses %v)", granted, restored, statuses)
	}
	if e.sadExists(sad) {
		t.Error("SAD still usable after it signed")
	}
}

// TestSignHashRestoreRespectsRevocation: signing fails without a signature,
// but while it ran an admin action revoked what the SAD hangs on. The SAD
// is not given back: the failure is recorded with the reason, and the SAD
// stays spent.
func TestSignHashRestoreRespectsRevocation(t *testing.T) {
	cases := []struct {
		name   string
		revoke func(tx store.Tx, cred string) error
		reason string
	}{
		{"user disabled", func(tx store.Tx, _ string) error {
			return storetest.EditUser(tx, "alice", func(u *store.User) { u.Status = store.UserDisabled })
		}, "not signed: device error; SAD not restored: user removed or disabled (burned)"},
		{"client removed", func(tx store.Tx, _ string) error { return tx.DeleteClient("rp1") },
			"not signed: device error; SAD not restored: client removed (burned)"},
		{"credential disabled", func(tx store.Tx, cred string) error {
			c, err := tx.Credential(cred)
			if err != nil {
				return err
			}
			c.Status = store.CredentialDisabled
			return tx.PutCredential(c)
		}, "not signed: device error; SAD not restored: credential disabled"},
		// set-pin and set-password revoke the user's SADs: this one was
		// consumed, so nothing was there to revoke, and its generation is
		// what keeps it from coming back.
		{"user's signing revoked (set-pin)", func(tx store.Tx, _ string) error {
			_, err := tx.RevokeUserSigning("alice")
			return err
		}, "not signed: device error; SAD not restored: PIN or password changed since it was issued (burned)"},
		{"user revoked (set-password)", func(tx store.Tx, _ string) error {
			_, err := tx.RevokeUser("alice")
			return err
		}, "not signed: device error; SAD not restored: PIN or password changed since it was issued (burned)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, e, bearer, cred := outageEnv(t)
			d := digest(tc.name)
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			// The admin action lands while the signature is made, after
			// the consume.
			tok.Hook(func(op string) error {
				if op != softtoken.OpSignDigest {
					return nil
				}
				tok.Hook(nil)
				e.update(func(tx store.Tx) error { return tc.revoke(tx, cred) })
				return errDeviceError
			})
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("signHash with a device error: %d %s", r.status, r.raw)
			}
			if e.sadExists(sad) {
				t.Error("the SAD was given back although its " + tc.name)
			}
			entries := e.auditEntries()
			if r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)); r.status == http.StatusOK {
				t.Fatalf("the SAD signed after its %s: %s", tc.name, r.raw)
			}
			if len(entries) != 2 || entries[1].Outcome != store.AuditFailed || entries[1].Reason != tc.reason ||
				entries[1].Ref != entries[0].Seq {
				t.Fatalf("audit log %q, want granted then failed (%s)", auditSummary(entries), tc.reason)
			}
		})
	}
}

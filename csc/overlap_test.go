package csc_test

import (
	"context"
	"crypto"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// watchedSigner is the shared software token, counting signatures and
// closing madeOne when the first SignDigests call has returned.
type watchedSigner struct {
	csc.Signer
	calls   atomic.Int32
	once    sync.Once
	madeOne chan struct{}
}

func newWatchedSigner() *watchedSigner {
	return &watchedSigner{Signer: token, madeOne: make(chan struct{})}
}

func (s *watchedSigner) SignDigests(ctx context.Context, keyID []byte, opts crypto.SignerOpts, digests [][]byte) ([][]byte, error) {
	s.calls.Add(1)
	defer s.once.Do(func() { close(s.madeOne) })
	return s.Signer.SignDigests(ctx, keyID, opts, digests)
}

// slowCommit is a csc.Store whose signHash transactions, once armed, end
// only after the HSM has answered, and then fail with err (nil: commit).
// So the signature is made while the commit is still in flight.
type slowCommit struct {
	csc.Store
	t      *testing.T
	signer *watchedSigner
	err    error
	armed  atomic.Bool
}

func (s *slowCommit) Batch(ctx context.Context, fn func(csc.Tx) error) error {
	if !s.armed.Load() {
		return s.Store.Batch(ctx, fn)
	}
	return s.Store.Batch(ctx, func(tx csc.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		select {
		case <-s.signer.madeOne:
		case <-time.After(10 * time.Second):
			s.t.Error("the HSM was not asked to sign while the consumption was committing")
		}
		return s.err
	})
}

var errIO = errors.New("store: write signd.db: input/output error")

// TestSignHashCommitAndSignOverlap: the HSM signs while the SAD's
// consumption commits. A signature leaves only when both succeeded: when
// the commit fails, the signature made meanwhile is dropped, the client
// gets the store's error, the SAD is untouched and the audit log holds
// nothing; when signing fails without a signature and the commit
// succeeds, the SAD is given back only after its consumption committed.
func TestSignHashCommitAndSignOverlap(t *testing.T) {
	cases := []struct {
		name      string
		commitErr error
		signErr   error // injected into the token's first signature
		status    int
		code      string
		audit     []string // auditSummary, refs relative to the grant
		sadLeft   bool
	}{
		{"both succeed", nil, nil, http.StatusOK, "", []string{"granted/-/"}, false},
		{"commit fails: disk full", storetest.ErrDiskFull, nil, http.StatusServiceUnavailable, "temporarily_unavailable", nil, true},
		{"commit fails: I/O error", errIO, nil, http.StatusInternalServerError, "server_error", nil, true},
		{"commit fails and signing fails", errIO, errDeviceError, http.StatusInternalServerError, "server_error", nil, true},
		{"signing fails, commit succeeds", nil, errDeviceError, http.StatusServiceUnavailable, "temporarily_unavailable",
			[]string{"granted/-/", "restored/1/not signed: device error; SAD restored"}, true},
	}
	for _, backend := range []struct {
		name string
		env  func(t testing.TB, opts ...envOption) *env
	}{{"memory", newEnv}, {"bolt", newBoltEnv}} {
		for _, tc := range cases {
			t.Run(backend.name+"/"+tc.name, func(t *testing.T) {
				tok := faultyToken(t)
				signer := newWatchedSigner()
				commit := &slowCommit{t: t, signer: signer, err: tc.commitErr}
				e := backend.env(t, withSigner(signer), func(h *csc.Handler) { commit.Store = h.Store; h.Store = commit })
				bearer := e.accessToken("alice", "rp1")
				cred := e.credential(valid("alice", keyA))
				d := digest(tc.name)
				sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)

				commit.armed.Store(true)
				if tc.signErr != nil {
					tok.FailOnce(softtoken.OpSignDigest, tc.signErr)
				}
				r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
				commit.armed.Store(false)
				if tc.status == http.StatusOK {
					e.verify(cred, d, signatures(t, r)[0])
				} else if r.status != tc.status || r.str("error") != tc.code || r.body["signatures"] != nil {
					t.Fatalf("signHash: %d %s, want %d %s and no signature", r.status, r.raw, tc.status, tc.code)
				}
				if n := signer.calls.Load(); n != 1 {
					t.Errorf("%d signatures asked of the HSM, want 1", n)
				}
				if e.sadExists(sad) != tc.sadLeft {
					t.Errorf("SAD stored afterwards: %v, want %v", e.sadExists(sad), tc.sadLeft)
				}
				entries := e.auditEntries()
				got := auditSummary(entries)
				if len(entries) > 0 && entries[0].Seq != 1 {
					t.Fatalf("audit log starts at %d", entries[0].Seq)
				}
				if len(got) != len(tc.audit) {
					t.Fatalf("audit log %q, want %q", got, tc.audit)
				}
				for i := range got {
					if got[i] != tc.audit[i] {
						t.Errorf("audit entry %d: %q, want %q", i, got[i], tc.audit[i])
					}
				}
				if e.metrics.get("signHash", "signed") != map[bool]int{true: 1}[tc.status == http.StatusOK] {
					t.Errorf("signHash metrics %v", e.metrics.signHash)
				}
				if tc.sadLeft {
					// The SAD the failed request did not spend signs now.
					e.verify(cred, d, signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)))[0])
				}
			})
		}
	}
}

// rerunBatch is a csc.Store whose next signHash transaction runs its
// function twice, as store/bolt's group commit does when the transaction
// it shared with others fails: the first run is rolled back, then between
// runs, then the function runs again and commits.
type rerunBatch struct {
	csc.Store
	between func()
	armed   atomic.Bool
}

var errSharedTxFailed = errors.New("another function of the shared transaction failed")

func (s *rerunBatch) Batch(ctx context.Context, fn func(csc.Tx) error) error {
	if !s.armed.CompareAndSwap(true, false) {
		return s.Store.Batch(ctx, fn)
	}
	err := s.Store.Batch(ctx, storetest.ThenFail(fn, errSharedTxFailed))
	if !errors.Is(err, errSharedTxFailed) {
		return err
	}
	s.between()
	return s.Store.Batch(ctx, fn)
}

// TestSignHashDecidedByTheCommittedRun: the signing starts when a run of
// the consuming transaction grants, but only the run that commits decides.
// A request whose SAD was taken between a rolled-back run and the
// committing one gets the refusal and never the signature made meanwhile;
// one whose credential was replaced (another key under the same ID) gets
// a signature by the key the committed run read.
func TestSignHashDecidedByTheCommittedRun(t *testing.T) {
	cases := []struct {
		name    string
		between func(e *env, cred, sad string)
		status  int
		calls   int32
		audit   []string
	}{
		{"SAD still there", func(*env, string, string) {}, http.StatusOK, 1, []string{"granted/-/"}},
		{"SAD taken meanwhile", func(e *env, _, sad string) {
			e.update(func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint(sad)) })
		}, http.StatusBadRequest, 1, []string{"refused/-/unknown SAD"}},
		{"credential replaced meanwhile", func(e *env, cred, _ string) {
			c := *e.creds[cred]
			c.KeyID = keyB.ID
			now := e.clock.Now()
			c.Chain = [][]byte{certFor(e.t, keyB, "alice signer", now.Add(-time.Hour), now.Add(time.Hour)), caCert.Raw}
			e.update(func(tx store.Tx) error {
				if err := tx.DeleteCredential(cred); err != nil {
					return err
				}
				return tx.CreateCredential(&c)
			})
			e.creds[cred] = &c
		}, http.StatusOK, 2, []string{"granted/-/"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			signer := newWatchedSigner()
			rerun := &rerunBatch{}
			e := newEnv(t, withSigner(signer), func(h *csc.Handler) { rerun.Store = h.Store; h.Store = rerun })
			bearer := e.accessToken("alice", "rp1")
			cred := e.credential(valid("alice", keyA))
			d := digest(tc.name)
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			rerun.between = func() { tc.between(e, cred, sad) }

			rerun.armed.Store(true)
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			if tc.status == http.StatusOK {
				e.verify(cred, d, signatures(t, r)[0])
			} else {
				wantError(t, r, tc.status, "invalid_request", "Invalid parameter SAD")
			}
			if n := signer.calls.Load(); n != tc.calls {
				t.Errorf("%d signatures asked of the HSM, want %d", n, tc.calls)
			}
			if got := auditSummary(e.auditEntries()); len(got) != len(tc.audit) || got[0] != tc.audit[0] {
				t.Errorf("audit log %q, want %q", got, tc.audit)
			}
		})
	}
}

// TestSADParallelUsesGroupCommit: many requests present one SAD at once to
// a bbolt store, whose group commit puts several of them in one
// transaction. Exactly one signature leaves, and only the request whose
// run consumed the SAD asked the HSM for one.
func TestSADParallelUsesGroupCommit(t *testing.T) {
	signer := newWatchedSigner()
	e := newBoltEnv(t, withSigner(signer))
	bearer := e.accessToken("alice", "rp1")
	cred := e.credential(valid("alice", keyA))
	e.raceSAD(t, 24, bearer, cred, "group commit race")
	if calls := signer.calls.Load(); calls != 1 {
		t.Errorf("%d signatures asked of the HSM, want 1", calls)
	}
	granted := 0
	for _, a := range e.auditEntries() {
		if a.Outcome == store.AuditGranted {
			granted++
		}
	}
	if granted != 1 {
		t.Errorf("%d grants in the audit log, want 1", granted)
	}
}

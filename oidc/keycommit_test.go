package oidc_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// errOutcomeUnknown is what store/etcd returns for a commit whose answer
// was lost (the attempt timed out, the connection dropped): the
// transaction may have applied.
var errOutcomeUnknown = fmt.Errorf("%w: etcd: context deadline exceeded", store.ErrOutcomeUnknown)

// errNoQuorum is what store/etcd returns for a transaction whose read
// failed (the cluster lost its quorum): its commit was never sent.
var errNoQuorum = fmt.Errorf("%w: etcd: etcdserver: request timed out", store.ErrUnavailable)

// lostAnswers is a KeyRingStore whose Updates, while outcome is set,
// commit and then return it (the answer of an applied etcd commit lost on
// the way back); readFails then makes every later View fail too (the
// cluster lost its quorum).
type lostAnswers struct {
	oidc.KeyRingStore
	outcome   error
	readFails bool
	failing   bool
}

func (l *lostAnswers) Update(ctx context.Context, fn func(oidc.KeyRingTx) error) error {
	if l.outcome == nil {
		err := l.KeyRingStore.Update(ctx, fn)
		if err != nil {
			l.failing = l.readFails
		}
		return err
	}
	if err := l.KeyRingStore.Update(ctx, fn); err != nil {
		return err
	}
	l.failing = l.readFails
	return l.outcome
}

func (l *lostAnswers) View(ctx context.Context, fn func(oidc.KeyRingTx) error) error {
	if l.failing {
		return storetest.ErrDiskFailed
	}
	return l.KeyRingStore.View(ctx, fn)
}

func (l *lostAnswers) Fence(ctx context.Context, fn func(oidc.KeyRingTx) error) error {
	if l.failing {
		return storetest.ErrDiskFailed
	}
	return l.KeyRingStore.Fence(ctx, fn)
}

// TestKeyCommitOutcomeUnknown: a key whose commit applied but answered
// store.ErrOutcomeUnknown (an etcd commit whose answer was lost) keeps
// its HSM key, and the first key of a provider signs: Ensure and Create
// read the key ring again and report the stored key. When that read fails
// too, the HSM key is kept and logged as an orphan with its label and
// KID. A commit that cannot have applied (a full disk, a failed read in
// the transaction: plain ErrUnavailable; a bare context end) leaves no
// key in the HSM, even when the key ring cannot be read after it.
func TestKeyCommitOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// create: Create a second key after Ensure's first (else the
		// failing write is Ensure's first key).
		create    bool
		readFails bool
		// applied: the commit applies (else it fails with fail, or as
		// a full disk does: nothing stored).
		applied bool
		fail    error
		// outcome: what the applied commit answers (nil:
		// errOutcomeUnknown).
		outcome error
		// wantErr: the call fails; wantHSM: the new key stays in the
		// HSM; wantLog: the log names it as an orphan.
		wantErr, wantHSM, wantLog bool
	}{
		{name: "Create: applied, answered with the context's end", create: true, applied: true, outcome: fmt.Errorf("%w: %w", store.ErrOutcomeUnknown, context.DeadlineExceeded), wantHSM: true},
		{name: "Ensure: applied", applied: true, wantHSM: true},
		{name: "Create: applied", create: true, applied: true, wantHSM: true},
		{name: "Ensure: applied, the key ring cannot be read", applied: true, readFails: true, wantErr: true, wantHSM: true, wantLog: true},
		{name: "Create: applied, the key ring cannot be read", create: true, applied: true, readFails: true, wantErr: true, wantHSM: true, wantLog: true},
		{name: "Ensure: not applied", wantErr: true},
		{name: "Create: not applied", create: true, wantErr: true},
		// Failures that cannot have committed (plain ErrUnavailable:
		// a failed read, a full disk; a bare context end) destroy the
		// key even when the key ring cannot be read after them: no
		// orphan is left for each retry.
		{name: "Ensure: not applied, the key ring cannot be read", readFails: true, wantErr: true},
		{name: "Create: not applied (no quorum), the key ring cannot be read", create: true, fail: errNoQuorum, readFails: true, wantErr: true},
		{name: "Create: not applied (the context's end), the key ring cannot be read", create: true, fail: context.Canceled, readFails: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			hsmKeys := &generated{KeyStore: token}
			var logs bytes.Buffer
			ls := &lostAnswers{KeyRingStore: keyRingStore(f.db)}
			f.keys.Store, f.keys.HSM = ls, hsmKeys
			f.keys.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			t.Cleanup(func() {
				for _, id := range hsmKeys.ids {
					_ = token.DestroyKey(ctx, id)
				}
			})
			if tt.create {
				if _, err := f.keys.Ensure(ctx, nil); err != nil {
					t.Fatal(err)
				}
				hsmKeys.ids = nil
			}
			ls.outcome, ls.readFails = errOutcomeUnknown, tt.readFails
			if tt.outcome != nil {
				ls.outcome = tt.outcome
			}
			if !tt.applied {
				ls.outcome = nil
				ls.KeyRingStore = failingUpdates{keyRingStore(f.db), cmp.Or(tt.fail, storetest.ErrDiskFull)}
			}
			var k *store.SigningKey
			var err error
			if tt.create {
				k, err = f.keys.Create(ctx, "", nil)
			} else {
				k, err = f.keys.Ensure(ctx, nil)
			}
			if tt.wantErr != (err != nil) || err != nil && !errors.Is(err, cmp.Or(tt.fail, store.ErrUnavailable)) {
				t.Fatalf("err = %v, want an error: %v (%v)", err, tt.wantErr, cmp.Or(tt.fail, store.ErrUnavailable))
			}
			if len(hsmKeys.ids) != 1 {
				t.Fatalf("%d keys generated, want 1", len(hsmKeys.ids))
			}
			id := hsmKeys.ids[0]
			hk, herr := token.Key(ctx, id)
			if tt.wantHSM != (herr == nil) {
				t.Fatalf("the new key in the HSM: %v; want it kept: %v", herr, tt.wantHSM)
			}
			if !tt.wantHSM && !errors.Is(herr, hsm.ErrKeyNotFound) {
				t.Fatalf("the new key in the HSM: %v, want ErrKeyNotFound", herr)
			}
			if err == nil {
				if k == nil || !bytes.Equal(k.KeyID, id) {
					t.Fatalf("reported key %+v, want the stored key of HSM ID %x", k, id)
				}
				if !tt.create {
					// The provider's only key signs: no crash loop
					// at the next start.
					if tok := f.signTest("n"); f.verify(tok) != nil {
						t.Fatalf("the key that applied does not sign: %v", f.verify(tok))
					}
				}
			}
			if tt.wantLog && !strings.Contains(logs.String(), `"label":"`+hk.Label()+`"`) {
				t.Errorf("no log line naming the kept key %s:\n%s", hk.Label(), logs.String())
			}
		})
	}
}

// failingUpdates is a KeyRingStore whose commits fail as a full disk's
// do: the function runs, nothing is stored, store.ErrUnavailable.
type failingUpdates struct {
	oidc.KeyRingStore
	fail error
}

func (f failingUpdates) Update(ctx context.Context, fn func(oidc.KeyRingTx) error) error {
	return f.KeyRingStore.Update(ctx, storetest.ThenFail(fn, f.fail))
}

// errRunAgain rolls back the first run of a transaction that rerunning
// runs again.
var errRunAgain = errors.New("conflict: run again")

// rerunning is a KeyRingStore whose next Update runs its function twice,
// as store/etcd does when its commit finds that another node wrote what
// the function read: the first run is rolled back, meanwhile runs (the
// other node's write), then the function runs again on the new state and
// commits.
type rerunning struct {
	oidc.KeyRingStore
	meanwhile func()
}

func (r *rerunning) Update(ctx context.Context, fn func(oidc.KeyRingTx) error) error {
	if r.meanwhile == nil {
		return r.KeyRingStore.Update(ctx, fn)
	}
	if err := r.KeyRingStore.Update(ctx, storetest.ThenFail(fn, errRunAgain)); !errors.Is(err, errRunAgain) {
		return err
	}
	r.meanwhile()
	r.meanwhile = nil
	return r.KeyRingStore.Update(ctx, fn)
}

// TestCreateRunsAgain: Create's transaction may run more than once (the
// store contract). Its first run finds no active key and makes the new key
// active; another daemon's first key is committed before the second run,
// which must publish the new key as next: one active key, not two.
func TestCreateRunsAgain(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	other := &oidc.KeyRing{Store: keyRingStore(f.db), HSM: token, IDTokenTTL: idTokenTTL, Now: f.clock.Now}
	rs := &rerunning{KeyRingStore: keyRingStore(f.db), meanwhile: func() {
		if _, err := other.Ensure(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}}
	f.keys.Store = rs
	k, err := f.keys.Create(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rs.meanwhile != nil {
		t.Fatal("Create's transaction did not run twice")
	}
	ks, err := f.keys.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ks {
		got = append(got, string(s.State))
	}
	slices.Sort(got)
	if k.State != store.SigningKeyNext || !k.ActivatedAt.IsZero() || strings.Join(got, " ") != "active next" {
		t.Fatalf("Create = %s (activated %v); keys %v, want the other daemon's key active and this one next", k.State, k.ActivatedAt, got)
	}
}

package admin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest/backends"
)

// lockedWorld is a store with alice, her password and her PIN locked.
func lockedWorld(t *testing.T) (*Local, store.Store) {
	t.Helper()
	db := backends.Memory(t, memory.Options{})
	h, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := h.Hash([]byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(context.Background(), func(tx store.Tx) error {
		return tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive,
			PasswordHash: hash, PINHash: hash, PasswordLocked: true, FailedPasswords: 5, PasswordLockouts: 2,
			PINLocked: true, FailedPINs: 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Store: db, Hasher: h, Now: func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }}), db
}

// refusals returns the admin_refused entries: actor, op and reason.
func refusals(t *testing.T, db store.Store) []string {
	t.Helper()
	var out []string
	err := db.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			if e.Kind == store.AuditAdminRefused {
				out = append(out, e.Actor+" "+e.Fields["op"]+" "+string(e.Outcome)+": "+e.Reason)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// UnlockUser lifts the password lock, the administrator's; UnlockPIN the
// PIN lock, the security officer's. Neither touches the other lock, and
// neither role may do the other's.
func TestUnlockSplitByRole(t *testing.T) {
	ctx := context.Background()
	so := SocketPrincipal(1001, "sofia", []Role{RoleSecurityOfficer})
	ad := SocketPrincipal(1002, "adam", []Role{RoleAdministrator})

	l, db := lockedWorld(t)
	if _, err := l.UnlockPIN(ctx, ad, "alice"); KindOf(err) != KindForbidden ||
		!strings.Contains(err.Error(), "UnlockPIN requires the role security_officer; uid:1002 (adam) holds the role administrator") {
		t.Errorf("UnlockPIN by the administrator: %v", err)
	}
	if _, err := l.UnlockUser(ctx, so, "alice"); KindOf(err) != KindForbidden {
		t.Errorf("UnlockUser by the security officer: %v", err)
	}
	want := []string{
		"uid:1002 (adam) UnlockPIN refused: UnlockPIN requires the role security_officer",
		"uid:1001 (sofia) UnlockUser refused: UnlockUser requires the role administrator",
	}
	if got := refusals(t, db); !slices.Equal(got, want) {
		t.Errorf("refusals audited:\n%q\nwant\n%q", got, want)
	}

	u, err := l.UnlockUser(ctx, ad, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u.PasswordLocked || u.FailedPasswords != 0 || !u.PINLocked || u.FailedPINs != 3 {
		t.Errorf("after UnlockUser: password locked %v (%d failures), PIN locked %v (%d failures); want only the password unlocked",
			u.PasswordLocked, u.FailedPasswords, u.PINLocked, u.FailedPINs)
	}
	u, err = l.UnlockPIN(ctx, so, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u.PINLocked || u.FailedPINs != 0 {
		t.Errorf("after UnlockPIN: PIN locked %v (%d failures)", u.PINLocked, u.FailedPINs)
	}
	err = db.View(ctx, func(tx store.Tx) error {
		su, err := tx.User("alice")
		if err == nil && su.PasswordLockouts != 0 {
			t.Errorf("UnlockUser kept %d timed locks", su.PasswordLockouts)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.UnlockPIN(ctx, so, "nobody"); KindOf(err) != KindNotFound {
		t.Errorf("UnlockPIN of an unknown user: %v", err)
	}
}

// A user's first signing PIN is the security officer's to set, as any
// later one (SetPIN): an administrator alone creates users without one.
func TestAddUserWithPINNeedsSecurityOfficer(t *testing.T) {
	ctx := context.Background()
	ad := SocketPrincipal(1002, "adam", []Role{RoleAdministrator})
	both := SocketPrincipal(1003, "ben", []Role{RoleAdministrator, RoleSecurityOfficer})
	l, db := lockedWorld(t)

	_, err := l.AddUser(ctx, ad, AddUserRequest{Username: "bob", Password: "correct horse", PIN: "2468"})
	if KindOf(err) != KindForbidden || !strings.Contains(err.Error(), "requires the role security_officer") {
		t.Errorf("AddUser with a PIN by the administrator: %v", err)
	}
	if _, err := l.ShowUser(ctx, ad, "bob"); KindOf(err) != KindNotFound {
		t.Errorf("bob exists after the refusal: %v", err)
	}
	if got := refusals(t, db); len(got) != 1 || !strings.HasPrefix(got[0], "uid:1002 (adam) SetPIN refused") {
		t.Errorf("refusals audited: %q", got)
	}
	if u, err := l.AddUser(ctx, ad, AddUserRequest{Username: "bob", Password: "correct horse"}); err != nil || u.HasPIN {
		t.Errorf("AddUser without a PIN by the administrator: %+v, %v", u, err)
	}
	if u, err := l.AddUser(ctx, both, AddUserRequest{Username: "carol", Password: "correct horse", PIN: "2468"}); err != nil || !u.HasPIN {
		t.Errorf("AddUser with a PIN by an administrator and security officer: %+v, %v", u, err)
	}
}

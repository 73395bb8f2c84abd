package storetest

import (
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// testSecretGeneration checks store.User.SecretGeneration: the store owns
// it (PutUser keeps the stored value whatever the caller passes), a new
// password or PIN hash raises it, RevokeUser and RevokeUserSigning raise
// it in the caller's transaction (a rollback takes the raise back), and a
// SAD carries the generation it was issued under.
func testSecretGeneration(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	createUsers(t, s, "alice")
	gen := func() uint64 {
		t.Helper()
		var g uint64
		view(t, s, func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err == nil {
				g = u.SecretGeneration
			}
			return err
		})
		return g
	}
	if g := gen(); g != 0 {
		t.Fatalf("new user: SecretGeneration = %d, want 0", g)
	}
	edit := func(change func(u *store.User)) func(tx store.Tx) error {
		return func(tx store.Tx) error { return EditUser(tx, "alice", change) }
	}
	tests := []struct {
		name  string
		raise bool
		fn    func(tx store.Tx) error
	}{
		{"PutUser failed PIN", false, edit(func(u *store.User) { u.FailedPINs++ })},
		{"PutUser caller's generation ignored", false, edit(func(u *store.User) { u.SecretGeneration = 1 << 40 })},
		{"PutUser new PIN", true, edit(func(u *store.User) { u.PINHash = mustHash(t, "654321") })},
		{"PutUser new password", true, edit(func(u *store.User) { u.PasswordHash = mustHash(t, "battery staple") })},
		{"PutUser PIN removed", true, edit(func(u *store.User) { u.PINHash = "" })},
		{"RevokeUserSigning", true, func(tx store.Tx) error { _, err := tx.RevokeUserSigning("alice"); return err }},
		{"RevokeUser", true, func(tx store.Tx) error { _, err := tx.RevokeUser("alice"); return err }},
		{"RevokeUser of an unknown user", false, func(tx store.Tx) error { _, err := tx.RevokeUser("nobody"); return err }},
		{"RevokeCredential", false, func(tx store.Tx) error { _, err := tx.RevokeCredential("cred-1"); return err }},
	}
	for _, tt := range tests {
		before := gen()
		updateRolledBack(t, s, tt.fn)
		if g := gen(); g != before {
			t.Errorf("%s rolled back: SecretGeneration %d → %d, want unchanged", tt.name, before, g)
		}
		update(t, s, tt.fn)
		want := before
		if tt.raise {
			want++
		}
		if g := gen(); g != want {
			t.Errorf("%s: SecretGeneration %d → %d, want %d", tt.name, before, g, want)
		}
	}

	// A SAD keeps the generation it was issued under; one of generation 0
	// (as written before the field existed) reads as 0.
	for _, g := range []uint64{0, gen(), 1<<64 - 1} {
		sad := newToken("sad-gen", store.TokenSAD, "", now.Add(time.Hour))
		sad.SecretGeneration = g
		update(t, s, func(tx store.Tx) error { return tx.CreateToken(sad) })
		view(t, s, func(tx store.Tx) error {
			got, err := tx.Token(sad.Hash)
			if err == nil && got.SecretGeneration != g {
				t.Errorf("SAD issued under generation %d reads %d", g, got.SecretGeneration)
			}
			return err
		})
		update(t, s, func(tx store.Tx) error { return tx.DeleteToken(sad.Hash) })
	}
}

package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

func TestCheckNewUser(t *testing.T) {
	if err := store.CheckNewUser(&store.User{Username: "alice"}); err != nil {
		t.Errorf("user without proofs: %v", err)
	}
	u := &store.User{Username: "alice", Proofs: []store.ProofRef{{ID: "p1"}}}
	if err := store.CheckNewUser(u); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("user with proofs: %v, want ErrInvalid", err)
	}
}

func TestReplaceUser(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := created.Add(time.Hour)
	old := &store.User{ID: "id-1", Username: "alice", CreatedAt: created, UpdatedAt: created, Proofs: []store.ProofRef{{ID: "p1"}}}

	u := &store.User{ID: "id-1", Username: "alice", Status: store.UserDisabled}
	if err := store.ReplaceUser(old, u, now); err != nil {
		t.Fatal(err)
	}
	if !u.CreatedAt.Equal(created) || !u.UpdatedAt.Equal(now) || len(u.Proofs) != 1 || u.Status != store.UserDisabled {
		t.Errorf("replaced user = %+v", u)
	}

	moved := &store.User{ID: "id-2", Username: "alice"}
	if err := store.ReplaceUser(old, moved, now); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("new ID: %v, want ErrInvalid", err)
	}
	if !moved.UpdatedAt.IsZero() {
		t.Error("a refused user was stamped")
	}
}

func TestCheckCredentialChange(t *testing.T) {
	old := &store.Credential{ID: "c", KeyID: []byte{1}, Algorithm: store.AlgRSA2048, KeyBits: 2048}
	tests := []struct {
		name string
		c    store.Credential
		ok   bool
	}{
		{"same key", store.Credential{ID: "c", KeyID: []byte{1}, Algorithm: store.AlgRSA2048, KeyBits: 2048, Description: "new"}, true},
		{"other key ID", store.Credential{ID: "c", KeyID: []byte{2}, Algorithm: store.AlgRSA2048, KeyBits: 2048}, false},
		{"other algorithm", store.Credential{ID: "c", KeyID: []byte{1}, Algorithm: store.AlgRSA3072, KeyBits: 2048}, false},
		{"other key size", store.Credential{ID: "c", KeyID: []byte{1}, Algorithm: store.AlgRSA2048, KeyBits: 3072}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := store.CheckCredentialChange(old, &tt.c)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, store.ErrInvalid)) {
				t.Errorf("CheckCredentialChange = %v, want ok=%v or ErrInvalid", err, tt.ok)
			}
		})
	}
}

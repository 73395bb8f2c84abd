package store_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/signd/signd/store"
)

func TestCheckSecretRequest(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		key  string
		size int
		ok   bool
	}{
		{"fits", context.Background(), "k", 32, true},
		{"smallest", context.Background(), "k", 16, true},
		{"largest", context.Background(), "k", 1024, true},
		{"no name", context.Background(), "", 32, false},
		{"too small", context.Background(), "k", 15, false},
		{"too large", context.Background(), "k", 1025, false},
		{"context done", done, "k", 32, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := store.CheckSecretRequest(tt.ctx, tt.key, tt.size); (err == nil) != tt.ok {
				t.Errorf("CheckSecretRequest = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestSecretKey(t *testing.T) {
	stored := bytes.Repeat([]byte{7}, 32)
	key, created, err := store.SecretKey("k", 32, stored, true)
	if err != nil || created || !bytes.Equal(key, stored) {
		t.Fatalf("stored key: %x, created %v, %v", key, created, err)
	}
	key[0] = 0
	if stored[0] != 7 {
		t.Error("the returned key aliases the stored one")
	}
	if _, _, err := store.SecretKey("k", 16, stored, true); err == nil {
		t.Error("a stored key of another size was accepted")
	}
	key, created, err = store.SecretKey("k", 32, nil, false)
	if err != nil || !created || len(key) != 32 || bytes.Equal(key, make([]byte, 32)) {
		t.Fatalf("new key: %x, created %v, %v", key, created, err)
	}
}

package hsm

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"testing"
)

// TestKeyCacheBounded: the private-key handle cache never holds more than
// Config.KeyCacheSize entries, and a key evicted from it still signs (it
// is found again on the token).
func TestKeyCacheBounded(t *testing.T) {
	ctx := context.Background()
	cfg := config(mainTok)
	cfg.KeyCacheSize = 1
	tok := openTest(t, cfg, options{})
	second, err := tok.GenerateRSA(ctx, "cache-bound", 2048)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tok.DestroyKey(ctx, second.ID); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	keys := []*KeyInfo{sharedKey, second}
	for round := range 3 {
		for _, k := range keys {
			d := sha256.Sum256([]byte{byte(round)})
			sig, err := tok.SignDigest(ctx, k.ID, crypto.SHA256, d[:])
			if err != nil {
				t.Fatalf("round %d, key %s: %v", round, k.Label, err)
			}
			if err := rsa.VerifyPKCS1v15(k.Public.(*rsa.PublicKey), crypto.SHA256, d[:], sig); err != nil {
				t.Fatalf("round %d, key %s: signature does not verify: %v", round, k.Label, err)
			}
			tok.cacheMu.Lock()
			n := len(tok.cache)
			tok.cacheMu.Unlock()
			if n > 1 {
				t.Fatalf("round %d: %d cached key handles, want at most KeyCacheSize = 1", round, n)
			}
		}
	}
}

// TestKeyCacheDefault: an unset KeyCacheSize is DefaultKeyCacheSize.
func TestKeyCacheDefault(t *testing.T) {
	tok := openTest(t, config(mainTok), options{})
	if tok.cacheMax != DefaultKeyCacheSize {
		t.Errorf("cacheMax = %d, want %d", tok.cacheMax, DefaultKeyCacheSize)
	}
}

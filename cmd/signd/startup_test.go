package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// TestStartupHasher: serve's hasher still hashes once at the configured
// cost before the daemon starts (the allocation counter grows by at least
// the argon2id memory), and a cost argon2id refuses stops it.
func TestStartupHasher(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       store.Argon2Params
		wantErr string
	}{
		{"8 MiB", store.Argon2Params{Time: 1, MemoryKiB: 8 << 10, Threads: 1, KeyLen: 32, SaltLen: 16}, ""},
		{"no passes", store.Argon2Params{Time: 0, MemoryKiB: 8 << 10, Threads: 1, KeyLen: 32, SaltLen: 16}, "argon2: time 0"},
		{"memory below 8 KiB per thread", store.Argon2Params{Time: 1, MemoryKiB: 8, Threads: 2, KeyLen: 32, SaltLen: 16}, "argon2: memory 8 KiB"},
		{"short hash", store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 8, SaltLen: 16}, "argon2: key length 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
			a.argon2 = &tc.p
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			h, err := a.startupHasher()
			runtime.ReadMemStats(&after)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("startupHasher() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Params() != tc.p {
				t.Errorf("hasher parameters %+v, want %+v", h.Params(), tc.p)
			}
			if got, want := after.TotalAlloc-before.TotalAlloc, uint64(tc.p.MemoryKiB)<<10; got < want {
				t.Errorf("start-up check allocated %d bytes, want at least %d: it did not hash at the configured cost", got, want)
			}
		})
	}
}

// TestServeRefusesMisconfiguredHasher: serve stops before it listens when
// the start-up check refuses the argon2id cost.
func TestServeRefusesMisconfiguredHasher(t *testing.T) {
	e := newEnv(t, "")
	var stderr bytes.Buffer
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &stderr)
	a.argon2 = &store.Argon2Params{Time: 0, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}
	a.ready = func(string, string) { t.Error("the daemon started with a refused argon2id cost") }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := a.root()
	cmd.SetArgs([]string{"--config", e.cfgPath, "serve"})
	err := cmd.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "argon2: time 0") {
		t.Fatalf("serve = %v, want the argon2 error", err)
	}
}

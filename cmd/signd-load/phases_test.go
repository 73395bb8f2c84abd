package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPhases takes an execution trace of requests shaped like signHash's
// (nested regions, a signing goroutine started by a log) and checks the
// table: one row per region path, the right counts, and time spent asleep
// counted as blocked wall time.
func TestPhases(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	request := func(typ string) {
		ctx, task := trace.NewTask(context.Background(), typ)
		defer task.End()
		trace.WithRegion(ctx, "bearer", func() { time.Sleep(time.Millisecond) })
		trace.WithRegion(ctx, "batch", func() {
			trace.WithRegion(ctx, "store.commit", func() { time.Sleep(2 * time.Millisecond) })
		})
		done := make(chan struct{})
		trace.Log(ctx, "csc", "sign.spawn")
		go func() {
			defer close(done)
			trace.WithRegion(ctx, "sign", func() { time.Sleep(time.Millisecond) })
		}()
		trace.WithRegion(ctx, "join", func() { <-done })
	}
	for range 3 {
		request("signHash")
	}
	request("other")
	trace.Stop()
	path := filepath.Join(t.TempDir(), "trace.out")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	if err := phases(phasesOpts{trace: path, task: "signHash"}, &out); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for line := range strings.SplitSeq(out.String(), "\n") {
		f := strings.Split(line, " | ")
		if len(f) == 10 && strings.HasPrefix(f[0], "| ") {
			rows[strings.TrimPrefix(f[0], "| ")] = f[1:]
		}
	}
	if !strings.HasPrefix(out.String(), "3 signHash tasks") {
		t.Errorf("header: %q", strings.SplitN(out.String(), "\n", 2)[0])
	}
	p50 := func(col string) float64 {
		v, _ := strconv.ParseFloat(strings.Fields(col)[0], 64)
		return v
	}
	for name, minWall := range map[string]float64{"task": 4000, "bearer": 900, "batch": 1800, "batch/store.commit": 1800, "sign": 900, "join": 0} {
		r, ok := rows[name]
		if !ok {
			t.Errorf("no row %q in\n%s", name, out.String())
			continue
		}
		if r[0] != "3" {
			t.Errorf("%s: n = %s, want 3", name, r[0])
		}
		if got := p50(r[1]); got < minWall {
			t.Errorf("%s: wall p50 %v µs, want at least %v", name, got, minWall)
		}
	}
	// Asleep is blocked, not running.
	if r := rows["batch/store.commit"]; r != nil && (p50(r[8]) < 1800 || p50(r[2]) > 1000) {
		t.Errorf("store.commit: run %s, blocked %s; want the sleep blocked", r[2], r[8])
	}
	if _, ok := rows["sign.spawn"]; !ok {
		t.Error("no sign.spawn row")
	}

	// Refusals: no trace, not a trace, no task of the type.
	if err := phases(phasesOpts{task: "signHash"}, &out); err == nil {
		t.Error("phases without --trace")
	}
	junk := filepath.Join(t.TempDir(), "junk")
	_ = os.WriteFile(junk, []byte("not a trace"), 0o600)
	if err := phases(phasesOpts{trace: junk, task: "signHash"}, &out); err == nil {
		t.Error("phases read a file that is no trace")
	}
	if err := phases(phasesOpts{trace: path, task: "token"}, &out); err == nil || !strings.Contains(err.Error(), `"token"`) {
		t.Errorf("no task of the type: %v", err)
	}
}

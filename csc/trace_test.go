package csc_test

import (
	"bytes"
	"io"
	"runtime/trace"
	"slices"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// TestSignHashTraced: while an execution trace is taken, a signHash
// request is a trace task "signHash" with its phases as regions (the
// signing on a goroutine of its own) — what `signd-load phases`
// tabulates; and the request still signs.
func TestSignHashTraced(t *testing.T) {
	e := newBoltEnv(t)
	bearer, cred := e.alice()
	d := digest("traced")
	sad := e.sad("alice", "rp1", cred, time.Hour, d)

	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err) // another trace is running (go test -trace)
	}
	r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
	trace.Stop()
	if r.status != 200 {
		t.Fatalf("traced signHash: %d %s", r.status, r.raw)
	}

	rd, err := xtrace.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var task xtrace.TaskID
	regions := map[string]xtrace.GoID{}
	for {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind() {
		case xtrace.EventTaskBegin:
			if ev.Task().Type == "signHash" {
				task = ev.Task().ID
			}
		case xtrace.EventRegionBegin:
			if rg := ev.Region(); rg.Task == task && task != 0 {
				regions[rg.Type] = ev.Goroutine()
			}
		}
	}
	if task == 0 {
		t.Fatal("no signHash task in the trace")
	}
	var got []string
	for name := range regions {
		got = append(got, name)
	}
	slices.Sort(got)
	for _, want := range []string{"batch", "bearer", "join", "params", "preflight", "preflight.view", "respond", "sign", "store.commit", "store.queue", "tx"} {
		if _, ok := regions[want]; !ok {
			t.Errorf("no region %q in the task; got %v", want, got)
		}
	}
	if regions["sign"] == regions["params"] {
		t.Error("the signing ran on the request's goroutine")
	}
}

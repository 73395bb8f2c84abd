package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

type phasesOpts struct {
	trace string // execution trace file (runtime/trace)
	task  string // task type, e.g. signHash
}

// goSpan is a stretch of time a goroutine spent in one state; for a
// syscall, kind says which (fsync, write, cgo, syscall).
type goSpan struct {
	from, to trace.Time
	state    trace.GoState
	kind     string
}

// regionSpan is one region of a task on one goroutine; path names it with
// the regions it is nested in on that goroutine ("batch/store.commit/tx").
type regionSpan struct {
	task     trace.TaskID
	g        trace.GoID
	path     string
	from, to trace.Time
}

type taskSpan struct {
	g                  trace.GoID
	from, to           trace.Time
	spawn              trace.Time // the csc "sign.spawn" log, 0 when none
	prevEnd, nextBegin trace.Time // of the goroutine's tasks before and after, 0 when none
}

// phases reads an execution trace and prints, for the tasks of type
// o.task, each phase's wall time and where it went (running, waiting for a
// CPU, in syscalls or cgo, blocked), p50 and p99 over the tasks, in µs.
//
// The phases are the task's regions (by their nesting path), and around
// them: http.in (from the connection's goroutine waking on the network to
// the task's start: scheduling, request line and headers, routing),
// http.out (from the task's end to the goroutine blocking on the network
// again, or to its next task when the next request was already there: the
// response's flush and the request log), sign.spawn (from starting the signing
// goroutine to its first region) and gaps (the task's own goroutine outside
// any top-level region).
func phases(o phasesOpts, out io.Writer) error {
	if o.trace == "" {
		return errors.New("phases needs --trace")
	}
	f, err := os.Open(o.trace)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return err
	}

	gos := map[trace.GoID][]goSpan{}
	type goNow struct {
		state trace.GoState
		since trace.Time
		kind  string
	}
	cur := map[trace.GoID]goNow{}
	kinds := map[trace.Stack]string{}
	tasks := map[trace.TaskID]*taskSpan{}
	var regions []regionSpan
	type open struct {
		typ  string
		task trace.TaskID
		from trace.Time
	}
	stacks := map[trace.GoID][]open{}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		t := ev.Time()
		switch ev.Kind() {
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			_, to := st.Goroutine()
			if c, ok := cur[g]; ok {
				gos[g] = append(gos[g], goSpan{from: c.since, to: t, state: c.state, kind: c.kind})
			}
			kind := ""
			if to == trace.GoSyscall {
				k, ok := kinds[st.Stack]
				if !ok {
					k = syscallKind(st.Stack)
					kinds[st.Stack] = k
				}
				kind = k
			}
			cur[g] = goNow{state: to, since: t, kind: kind}
		case trace.EventTaskBegin:
			tk := ev.Task()
			if tk.Type == o.task {
				tasks[tk.ID] = &taskSpan{g: ev.Goroutine(), from: t}
			}
		case trace.EventTaskEnd:
			if ts := tasks[ev.Task().ID]; ts != nil {
				ts.to = t
			}
		case trace.EventLog:
			l := ev.Log()
			if ts := tasks[l.Task]; ts != nil && l.Message == "sign.spawn" && ts.spawn == 0 {
				ts.spawn = t
			}
		case trace.EventRegionBegin:
			g := ev.Goroutine()
			stacks[g] = append(stacks[g], open{typ: ev.Region().Type, task: ev.Region().Task, from: t})
		case trace.EventRegionEnd:
			g := ev.Goroutine()
			s := stacks[g]
			i := len(s) - 1
			for i >= 0 && s[i].typ != ev.Region().Type {
				i--
			}
			if i < 0 {
				continue // begun before the trace started
			}
			path := make([]string, 0, i+1)
			for _, p := range s[:i+1] {
				path = append(path, p.typ)
			}
			regions = append(regions, regionSpan{task: s[i].task, g: g, path: strings.Join(path, "/"), from: s[i].from, to: t})
			stacks[g] = s[:i]
		}
	}

	rows := map[string]*phaseRow{}
	row := func(name string) *phaseRow {
		if rows[name] == nil {
			rows[name] = &phaseRow{name: name}
		}
		return rows[name]
	}
	byTask := map[trace.TaskID][]regionSpan{}
	for _, rg := range regions {
		if tasks[rg.task] != nil {
			byTask[rg.task] = append(byTask[rg.task], rg)
		}
	}
	// The tasks of each goroutine in order: a keep-alive connection's
	// goroutine serves one request after the other, and when the next
	// request is already there it does not block in between.
	perG := map[trace.GoID][]*taskSpan{}
	for _, ts := range tasks {
		if ts.to != 0 {
			perG[ts.g] = append(perG[ts.g], ts)
		}
	}
	for _, l := range perG {
		slices.SortFunc(l, func(a, b *taskSpan) int { return int(a.from - b.from) })
		for i, ts := range l {
			if i > 0 {
				ts.prevEnd = l[i-1].to
			}
			if i+1 < len(l) {
				ts.nextBegin = l[i+1].from
			}
		}
	}
	n := 0
	for id, ts := range tasks {
		if ts.to == 0 {
			continue
		}
		n++
		spans := gos[ts.g]
		row("task").add(breakdown(spans, ts.from, ts.to))
		// http.in: since the goroutine last woke from blocking on the
		// network; when it did not block since the previous request, that
		// stretch is the previous request's http.out.
		if w, ok := lastWake(spans, ts.from); ok {
			if w < ts.prevEnd {
				w = ts.from
			}
			row("http.in").add(breakdown(spans, w, ts.from))
		}
		if b, ok := nextBlock(spans, ts.to); ok {
			if ts.nextBegin != 0 && ts.nextBegin < b {
				b = ts.nextBegin
			}
			row("http.out").add(breakdown(spans, ts.to, b))
		}
		var top []regionSpan
		var firstSign regionSpan
		for _, rg := range byTask[id] {
			row(rg.path).add(breakdown(gos[rg.g], rg.from, rg.to))
			if rg.g == ts.g && !strings.Contains(rg.path, "/") {
				top = append(top, rg)
			}
			if rg.path == "sign" && (firstSign.from == 0 || rg.from < firstSign.from) {
				firstSign = rg
			}
		}
		if ts.spawn != 0 && firstSign.from != 0 {
			// On the signing goroutine: created, then runnable until a
			// P runs it.
			row("sign.spawn").add(breakdown(gos[firstSign.g], ts.spawn, firstSign.from))
		}
		// gaps: the task's goroutine between its top-level regions.
		slices.SortFunc(top, func(a, b regionSpan) int { return int(a.from - b.from) })
		var gap phase
		at := ts.from
		for _, rg := range top {
			if rg.from > at {
				gap = gap.plus(breakdown(spans, at, rg.from))
			}
			at = max(at, rg.to)
		}
		if ts.to > at {
			gap = gap.plus(breakdown(spans, at, ts.to))
		}
		row("gaps").add(gap)
	}
	if n == 0 {
		return fmt.Errorf("%s: no ended task of type %q (was the trace taken while requests ran?)", o.trace, o.task)
	}

	order := []string{"http.in", "task", "bearer", "params", "preflight", "preflight/preflight.view",
		"preflight/preflight.checkkey", "preflight/preflight.checkkey/hsm.acquire", "batch", "batch/store.queue",
		"batch/store.commit", "batch/store.commit/tx", "batch/tx", "sign.spawn", "sign", "sign/hsm.acquire",
		"sign/hsm.verify", "join", "respond", "gaps", "http.out"}
	for name := range rows {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	fmt.Fprintf(out, "%d %s tasks; µs, p50 / p99 over the tasks (nearest rank); a phase's wall time = run + sched (runnable, waiting for a P) + sys (syscalls and cgo; fsync, write, cgo) + blocked\n\n", n, o.task)
	fmt.Fprintln(out, "| phase | n | wall | run | sched | fsync | write | cgo | other sys | blocked |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|")
	for _, name := range order {
		if r := rows[name]; r != nil {
			r.print(out)
		}
	}
	return nil
}

// syscallKind names a syscall by its stack.
func syscallKind(s trace.Stack) string {
	kind := "syscall"
	for f := range s.Frames() {
		switch {
		case strings.Contains(f.Func, "fdatasync") || strings.Contains(f.Func, "Fsync"):
			return "fsync"
		case strings.Contains(f.Func, "_Cfunc_") || strings.HasPrefix(f.Func, "runtime.cgocall"):
			kind = "cgo"
		case strings.Contains(f.Func, "Pwrite") || strings.Contains(f.Func, "WriteAt"):
			kind = "write"
		}
	}
	return kind
}

// phase is where one stretch of time went.
type phase struct {
	wall, run, sched, fsync, write, cgo, sys, blocked time.Duration
}

func (p phase) plus(q phase) phase {
	return phase{p.wall + q.wall, p.run + q.run, p.sched + q.sched, p.fsync + q.fsync, p.write + q.write, p.cgo + q.cgo, p.sys + q.sys, p.blocked + q.blocked}
}

// breakdown splits [from, to] of a goroutine's time by its states.
func breakdown(spans []goSpan, from, to trace.Time) phase {
	p := phase{wall: time.Duration(to - from)}
	i, _ := slices.BinarySearchFunc(spans, from, func(s goSpan, t trace.Time) int {
		switch {
		case s.to <= t:
			return -1
		case s.from > t:
			return 1
		}
		return 0
	})
	for ; i < len(spans) && spans[i].from < to; i++ {
		s := spans[i]
		d := time.Duration(min(s.to, to) - max(s.from, from))
		if d <= 0 {
			continue
		}
		switch s.state {
		case trace.GoRunning:
			p.run += d
		case trace.GoRunnable:
			p.sched += d
		case trace.GoSyscall:
			switch s.kind {
			case "fsync":
				p.fsync += d
			case "write":
				p.write += d
			case "cgo":
				p.cgo += d
			default:
				p.sys += d
			}
		default:
			p.blocked += d
		}
	}
	return p
}

// lastWake is when the goroutine last became runnable after blocking,
// at or before t.
func lastWake(spans []goSpan, t trace.Time) (trace.Time, bool) {
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		if s.to > t {
			continue
		}
		if s.state == trace.GoWaiting {
			return s.to, true
		}
	}
	return 0, false
}

// nextBlock is when the goroutine next blocked after t.
func nextBlock(spans []goSpan, t trace.Time) (trace.Time, bool) {
	for _, s := range spans {
		if s.from >= t && s.state == trace.GoWaiting {
			return s.from, true
		}
	}
	return 0, false
}

// phaseRow collects one phase over the tasks.
type phaseRow struct {
	name string
	ps   []phase
}

func (r *phaseRow) add(p phase) { r.ps = append(r.ps, p) }

func (r *phaseRow) print(w io.Writer) {
	col := func(get func(phase) time.Duration) string {
		v := make([]time.Duration, len(r.ps))
		for i, p := range r.ps {
			v[i] = get(p)
		}
		slices.Sort(v)
		return fmt.Sprintf("%.0f / %.0f", us(quantile(v, 0.5)), us(quantile(v, 0.99)))
	}
	fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, len(r.ps),
		col(func(p phase) time.Duration { return p.wall }), col(func(p phase) time.Duration { return p.run }),
		col(func(p phase) time.Duration { return p.sched }), col(func(p phase) time.Duration { return p.fsync }),
		col(func(p phase) time.Duration { return p.write }), col(func(p phase) time.Duration { return p.cgo }),
		col(func(p phase) time.Duration { return p.sys }), col(func(p phase) time.Duration { return p.blocked }))
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

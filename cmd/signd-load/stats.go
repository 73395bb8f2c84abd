package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// defaultDuration and maxDuration bound every measurement.
const (
	defaultDuration = 5 * time.Second
	maxDuration     = 5 * time.Minute
)

// result is one measurement.
type result struct {
	mode        string
	concurrency int
	ok, errors  int
	elapsed     time.Duration
	latencies   []time.Duration // of successful operations
	firstError  string
}

func (r *result) print(w io.Writer) {
	slices.Sort(r.latencies)
	rate := float64(r.ok) / r.elapsed.Seconds()
	fmt.Fprintf(w, "mode=%s c=%d n=%d errors=%d seconds=%.2f rate=%.1f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
		r.mode, r.concurrency, r.ok, r.errors, r.elapsed.Seconds(), rate,
		ms(quantile(r.latencies, 0.50)), ms(quantile(r.latencies, 0.99)), ms(quantile(r.latencies, 1)))
	if r.firstError != "" {
		fmt.Fprintf(w, "# first error (c=%d): %s\n", r.concurrency, r.firstError)
	}
}

// report ends the measurement begun at start: it prints r to w and fails
// when no operation (what: request, commit) succeeded.
func (r *result) report(w io.Writer, start time.Time, what string) error {
	r.elapsed = time.Since(start)
	r.print(w)
	if r.ok == 0 {
		return fmt.Errorf("no %s succeeded", what)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

package logtest

import (
	"encoding/json"
	"strings"
	"testing"
)

// Lines decodes text holding one JSON value a line into a T each; blank
// lines are skipped. A line that does not decode into T fails the test.
func Lines[T any](t testing.TB, text string) []T {
	t.Helper()
	var out []T
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q is not the JSON expected: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// Records decodes a JSON log (slog's JSON handler) into its records.
func Records(t testing.TB, text string) []map[string]any {
	t.Helper()
	return Lines[map[string]any](t, text)
}

// Messages returns the records of a JSON log whose "msg" is msg.
func Messages(t testing.TB, text, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range Records(t, text) {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

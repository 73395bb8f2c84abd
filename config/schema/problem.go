package schema

import (
	"fmt"
	"slices"
	"strings"
)

// Problem is one bad key.
type Problem struct {
	Key     string // dotted key, e.g. "server.listen"; "" if no key applies
	Msg     string // what is wrong; for an unknown key, an optional hint
	Unknown bool   // the key is not a configuration key at all
}

// Error formats the problem as one line that starts with or quotes its key:
//
//	server.listen: "nope" is not host:port
//	unknown key "server.lisen" (did you mean "server.listen"?)
func (p Problem) Error() string {
	switch {
	case p.Unknown && p.Msg != "":
		return fmt.Sprintf("unknown key %q (%s)", p.Key, p.Msg)
	case p.Unknown:
		return fmt.Sprintf("unknown key %q", p.Key)
	case p.Key == "":
		return p.Msg
	}
	return p.Key + ": " + p.Msg
}

// Error is returned by config.Load and Config.Validate: every bad key, one per line.
// Use errors.As to reach the individual problems.
type Error struct {
	Source   string // the file Load read, "" if none
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each problem to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// Keys returns the names of the bad keys, in report order.
func (e *Error) Keys() []string {
	keys := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		keys = append(keys, p.Key)
	}
	return keys
}

// suggest returns a "did you mean" hint for an unknown key, or "".
func suggest(key string, known []string) string {
	best, bestDist := "", 3 // suggest only within an edit distance of 2
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf("did you mean %q? keys are lower case", k)
		}
		if d := EditDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// EditDistance is the Levenshtein distance between a and b.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package schema

import (
	"crypto/subtle"
	"reflect"
	"slices"
)

// Changed returns the keys of keys whose effective values differ between
// the configuration structs *was and *now (as Settings flattens them), in
// the order of keys. Values compare as loaded, not as written: a duration
// is a duration ("1h" and "60m" are one), a list is its items in order
// (none and an empty list are one, as are the environment's
// comma-separated list and the file's YAML list), a Secret is compared in
// constant time.
func Changed(keys []Key, was, now any) []Key {
	before := map[string]any{}
	for _, s := range Settings(was) {
		before[s.Key] = s.Value
	}
	after := map[string]any{}
	for _, s := range Settings(now) {
		after[s.Key] = s.Value
	}
	var out []Key
	for _, k := range keys {
		if !sameValue(before[k.Name], after[k.Name]) {
			out = append(out, k)
		}
	}
	return out
}

// sameValue compares two values of one key.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case Secret:
		y, ok := b.(Secret)
		return ok && subtle.ConstantTimeCompare([]byte(x.Reveal()), []byte(y.Reveal())) == 1
	case []string:
		y, ok := b.([]string)
		return ok && slices.Equal(x, y)
	}
	return reflect.DeepEqual(a, b)
}

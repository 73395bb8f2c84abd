package schema

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// Settings returns every key of the configuration struct *v with its
// effective value, in the order of its fields (its mapstructure tags name
// the keys).
func Settings(v any) []Setting {
	var out []Setting
	flatten("", reflect.ValueOf(v).Elem(), &out)
	return out
}

// Setting is one key and its effective value, see config.Config.Settings.
type Setting struct {
	Key   string
	Value any // Secret values stay Secrets, so printing them redacts
}

func flatten(prefix string, v reflect.Value, out *[]Setting) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key := f.Tag.Get("mapstructure")
		if key == ",squash" { // an embedded part of the section
			flatten(prefix, v.Field(i), out)
			continue
		}
		if prefix != "" {
			key = prefix + "." + key
		}
		if f.Type.Kind() == reflect.Struct {
			flatten(key, v.Field(i), out)
			continue
		}
		*out = append(*out, Setting{Key: key, Value: v.Field(i).Interface()})
	}
}

// SortProblems puts unknown keys first (a typo often explains a later
// "required"), then the rest in the order of the key table, a section
// sorting with its first key.
func SortProblems(ps []Problem, keys []Key) {
	rank := func(p Problem) int {
		if p.Unknown {
			return -1
		}
		for i, k := range keys {
			if k.Name == p.Key || strings.HasPrefix(k.Name, p.Key+".") {
				return i
			}
		}
		return len(keys)
	}
	slices.SortStableFunc(ps, func(a, b Problem) int { return cmp.Compare(rank(a), rank(b)) })
}

func AbsPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("config: %s: %w", p, err)
	}
	return a, nil
}

// MaxFileBytes bounds the configuration file (the example naming every
// key is about 10 KiB).
const MaxFileBytes = 1 << 20

// ReadYAML reads and parses the file, and returns the hex SHA-256 of its
// bytes (what the daemon records as the configuration it loaded). It uses the YAML library viper itself
// uses, so values are typed exactly as viper would type them, but it keeps
// what viper would lose: key case, and empty sections (so a misspelt empty
// section is reported). The library refuses duplicate keys. check (nil
// for none) judges the open file before a byte is read: who owns it, who
// may write it.
func ReadYAML(path string, check func(fs.FileInfo) error) (map[string]any, string, error) {
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	// A device, a FIFO or a directory named by mistake (or by someone
	// else) must not hang or exhaust the daemon: only a regular file of
	// reasonable size is read.
	fi, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("config: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("config: %s is not a regular file", path)
	}
	if check != nil {
		if err := check(fi); err != nil {
			return nil, "", err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("config: %w", err)
	}
	if len(b) > MaxFileBytes {
		return nil, "", fmt.Errorf("config: %s is larger than %d bytes", path, MaxFileBytes)
	}
	sum := sha256.Sum256(b)
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, "", fmt.Errorf("config: parsing %s: %w", path, err)
	}
	return m, hex.EncodeToString(sum[:]), nil
}

// Sift walks the parsed file against the known keys. It returns the values
// of the known keys (nested, ready for viper) and a problem for every unknown
// key and every value of the wrong shape. Unknown keys are reported at the
// highest unknown level: a whole unknown section is one problem.
func Sift(raw map[string]any, keys []Key) (map[string]any, []Problem) {
	leaves := make(map[string]bool, len(keys))
	sections := map[string]bool{}
	var names []string
	for _, k := range keys {
		leaves[k.Name] = true
		names = append(names, k.Name)
		parts := strings.Split(k.Name, ".")
		for i := 1; i < len(parts); i++ {
			s := strings.Join(parts[:i], ".")
			if !sections[s] {
				sections[s] = true
				names = append(names, s)
			}
		}
	}

	var problems []Problem
	var walk func(prefix string, in map[string]any) map[string]any
	walk = func(prefix string, in map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range sortedKeys(in) {
			val := in[k]
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			switch {
			case leaves[key]:
				if _, isMap := asMap(val); isMap {
					problems = append(problems, Problem{Key: key, Msg: "must be a single value, not a mapping"})
					continue
				}
				if val != nil { // "key:" with no value leaves the default
					out[k] = val
				}
			case sections[key]:
				if val == nil { // "section:" with nothing under it
					continue
				}
				sub, isMap := asMap(val)
				if !isMap {
					problems = append(problems, Problem{Key: key, Msg: "must be a mapping of keys"})
					continue
				}
				out[k] = walk(key, sub)
			default:
				msg := suggest(key, names)
				if msg == "" {
					msg = sectionHint(key, keys)
				}
				problems = append(problems, Problem{Key: key, Msg: msg, Unknown: true})
			}
		}
		return out
	}
	return walk("", raw), problems
}

// sectionHint names the keys of the section key is in when that section
// is a short list of plain keys (admin.roles, a rate limit), so that a
// name far from every key still learns what it may be:
// "admin.roles holds security_officer, administrator, auditor".
func sectionHint(key string, keys []Key) string {
	i := strings.LastIndex(key, ".")
	if i < 0 {
		return ""
	}
	parent := key[:i] + "."
	var leaves []string
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k.Name, parent)
		if !ok {
			continue
		}
		if strings.Contains(rest, ".") {
			return ""
		}
		leaves = append(leaves, rest)
	}
	if len(leaves) == 0 || len(leaves) > 8 {
		return ""
	}
	return key[:i] + " holds " + strings.Join(leaves, ", ")
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	return nil, false
}

// Decode unmarshals v into target strictly and turns every decoding failure into
// a problem named by its key.
func Decode(v *viper.Viper, target any) []Problem {
	// UnmarshalExact refuses keys without a field; Sift has already removed
	// (and reported) unknown file keys, so only a row in the table without a
	// struct field can trip it. The opposite, a field without a row, is
	// caught by config's TestKeysTableMatchesStruct (mapstructure's ErrorUnset would
	// also count the unexported source field).
	err := v.UnmarshalExact(target, viper.DecodeHook(mapstructure.DecodeHookFuncType(strictTypes)))
	if err == nil {
		return nil
	}
	var problems []Problem
	for _, e := range leafErrors(err) {
		var de *mapstructure.DecodeError
		if errors.As(e, &de) {
			key, msg := strings.ToLower(de.Name()), errors.Unwrap(de).Error()
			// An element of a list is reported under the list's key, like
			// the validation of its entries: "entry 2: ...".
			if k, idx, ok := strings.Cut(strings.TrimSuffix(key, "]"), "["); ok {
				if n, err := strconv.Atoi(idx); err == nil {
					key, msg = k, fmt.Sprintf("entry %d: %s", n+1, msg)
				}
			}
			problems = append(problems, Problem{Key: key, Msg: msg})
			continue
		}
		problems = append(problems, Problem{Msg: e.Error()})
	}
	return problems
}

// leafErrors flattens mapstructure's error tree (a wrapped errors.Join of
// possibly nested joins) down to the per-field *DecodeErrors.
func leafErrors(err error) []error {
	switch u := err.(type) {
	case *mapstructure.DecodeError:
		return []error{err}
	case interface{ Unwrap() []error }:
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return leafErrors(inner)
		}
	}
	return []error{err}
}

// strictTypes is a mapstructure decode hook that replaces viper's weak
// typing for the four kinds of leaf we have:
//   - strings (and Secrets) must come as strings: YAML turns an unquoted PIN
//     0123 into the number 83, and a silently mangled PIN locks the token.
//     The value is never echoed, since it may be the PIN;
//   - integers may come as numbers or as decimal strings (environment);
//   - numbers (float64: the rates) likewise, fractions allowed;
//   - durations must carry a unit ("30s"); a bare number would be taken as
//     nanoseconds;
//   - lists of strings come as a YAML list of strings, or as one string of
//     comma-separated items (how an environment variable carries a list).
//   - booleans are YAML true/false or, from the environment, exactly
//     "true"/"false" (not 1, yes or on).
func strictTypes(from, to reflect.Type, data any) (any, error) {
	if data == nil {
		return data, nil
	}
	switch {
	case to == reflect.TypeFor[[]string]():
		switch from.Kind() {
		case reflect.String:
			var items []string
			for item := range strings.SplitSeq(data.(string), ",") {
				if item = strings.TrimSpace(item); item != "" {
					items = append(items, item)
				}
			}
			return items, nil
		case reflect.Slice, reflect.Array:
			return data, nil // each element goes through this hook as a string
		}
		return nil, fmt.Errorf("must be a list of strings, not a %s", kindName(from))
	case to == reflect.TypeFor[time.Duration]():
		switch d := data.(type) {
		case time.Duration:
			return d, nil
		case string:
			parsed, err := time.ParseDuration(d)
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration (use a unit, e.g. \"30s\")", d)
			}
			return parsed, nil
		}
		return nil, fmt.Errorf("must be a duration with a unit, e.g. \"30s\", not a %s", kindName(from))
	case to.Kind() == reflect.Bool:
		switch d := data.(type) {
		case bool:
			return d, nil
		case string: // environment variables
			switch d {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, fmt.Errorf("%q is not a boolean (true or false)", d)
		}
		return nil, fmt.Errorf("must be a boolean (true or false), not a %s", kindName(from))
	case to.Kind() == reflect.String:
		if from.Kind() != reflect.String {
			return nil, fmt.Errorf("must be a string, not a %s (quote the value in YAML)", kindName(from))
		}
	case to.Kind() == reflect.Float64:
		switch from.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			return data, nil // NaN and infinities are left to validation
		case reflect.String:
			f, err := strconv.ParseFloat(data.(string), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%q is not a number", data)
			}
			return f, nil
		}
		return nil, fmt.Errorf("must be a number, not a %s", kindName(from))
	case to.Kind() == reflect.Int || to.Kind() == reflect.Int64:
		switch from.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return data, nil
		case reflect.Float32, reflect.Float64:
			f := reflect.ValueOf(data).Float()
			if f != float64(int64(f)) {
				return nil, fmt.Errorf("%v is not an integer", data)
			}
			return int64(f), nil
		case reflect.String:
			s := data.(string)
			if !IsDecimal(s) {
				return nil, fmt.Errorf("%q is not an integer", s)
			}
			return s, nil // mapstructure parses it and reports overflow
		}
		return nil, fmt.Errorf("must be an integer, not a %s", kindName(from))
	}
	return data, nil
}

func IsDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Map:
		return "mapping"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.String:
		return "string"
	}
	return t.String()
}

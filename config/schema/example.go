package schema

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Example returns a configuration file that names every key of keys, in
// the table's order, under its description and commented out with its
// default ("#listen: 127.0.0.1:8443"): deleting the "#" of a line sets that
// key. The keys of set are written uncommented with the given value
// instead (the Debian package's paths); only string keys can be set this
// way. `signd config example` prints it; the package ships it as
// /etc/signd/signd.yaml.
func Example(keys []Key, set map[string]string) ([]byte, error) {
	known := make(map[string]Key, len(keys))
	for _, k := range keys {
		known[k.Name] = k
	}
	for name := range set {
		k, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("config example: unknown key %s", name)
		}
		if _, ok := k.Default.(string); !ok {
			return nil, fmt.Errorf("config example: %s is not a string key; only string keys can be set", name)
		}
	}
	// A section is written uncommented when it holds a key of set.
	live := map[string]bool{}
	for name := range set {
		parts := strings.Split(name, ".")
		for i := 1; i < len(parts); i++ {
			live[strings.Join(parts[:i], ".")] = true
		}
	}

	var b bytes.Buffer
	b.WriteString("# signd configuration: every key, with its default. Delete a key's \"#\" to set it;\n" +
		"# SIGND_<KEY> environment variables and flags override this file.\n" +
		"# `signd config check` lists every problem at once.\n")
	var open []string         // the sections the previous key was in
	done := map[string]bool{} // sections already closed: YAML allows one of each
	for _, k := range keys {
		parts := strings.Split(k.Name, ".")
		sections, leaf := parts[:len(parts)-1], parts[len(parts)-1]
		common := 0
		for common < len(open) && common < len(sections) && open[common] == sections[common] {
			common++
		}
		for i := common; i < len(open); i++ {
			done[strings.Join(open[:i+1], ".")] = true
		}
		for i := common; i < len(sections); i++ {
			path := strings.Join(sections[:i+1], ".")
			if done[path] {
				return nil, fmt.Errorf("config example: the key table splits section %s (at %s)", path, k.Name)
			}
			if i == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%s%s%s:\n", indent(i), comment(!live[path]), sections[i])
		}
		open = slices.Clone(sections)

		in := indent(len(sections))
		usage := k.Usage
		if k.Required {
			usage += " (required)"
		}
		fmt.Fprintf(&b, "%s# %s\n", in, usage)
		if v, ok := set[k.Name]; ok {
			val, err := yamlValue(v)
			if err != nil {
				return nil, fmt.Errorf("config example: %s: %w", k.Name, err)
			}
			fmt.Fprintf(&b, "%s%s: %s\n", in, leaf, val)
			continue
		}
		val, err := yamlValue(k.Default)
		if err != nil {
			return nil, fmt.Errorf("config example: %s: %w", k.Name, err)
		}
		fmt.Fprintf(&b, "%s#%s: %s\n", in, leaf, val)
	}
	return b.Bytes(), nil
}

func indent(depth int) string { return strings.Repeat("  ", depth) }

func comment(c bool) string {
	if c {
		return "#"
	}
	return ""
}

// yamlValue writes a default as YAML that config.Load reads back as the same
// value: durations as "30s", lists in flow style, Secrets as "".
func yamlValue(v any) (string, error) {
	switch v := v.(type) {
	case time.Duration:
		return v.String(), nil
	case Secret:
		return `""`, nil
	case []string:
		items := make([]string, len(v))
		for i, s := range v {
			item, err := yamlValue(s)
			if err != nil {
				return "", err
			}
			items[i] = item
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(string(out), "\n")
	if strings.Contains(s, "\n") {
		return "", fmt.Errorf("value %q does not fit on one line", fmt.Sprint(v))
	}
	return s, nil
}

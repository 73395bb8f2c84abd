package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// commentedKey is a key or section line of Example's output, commented
// out; a description line has a space after its "#".
var commentedKey = regexp.MustCompile(`(?m)^(\s*)#([a-z0-9_]+:)`)

// dotted flattens a parsed YAML document into dotted key names.
func dotted(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			dotted(prefix+k+".", sub, out)
			continue
		}
		out[prefix+k] = v
	}
}

func parseExample(t *testing.T, text string) map[string]any {
	t.Helper()
	raw := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &raw); err != nil {
		t.Fatalf("example is not YAML: %v\n%s", err, text)
	}
	flat := map[string]any{}
	dotted("", raw, flat)
	return flat
}

// TestExampleNamesEveryKey: the example, every key uncommented, is a file
// that sets each key of the table, no other, to its default. So adding a
// key to the table adds it to /etc/signd/signd.yaml too, and a default
// the example mis-writes fails here.
func TestExampleNamesEveryKey(t *testing.T) {
	isolate(t)
	text, err := Example(nil)
	if err != nil {
		t.Fatal(err)
	}
	if flat := parseExample(t, string(text)); len(flat) != 0 {
		t.Errorf("example sets keys though all are commented out: %v", flat)
	}
	uncommented := commentedKey.ReplaceAllString(string(text), "$1$2")
	flat := parseExample(t, uncommented)
	var names, want []string
	for name := range flat {
		names = append(names, name)
	}
	for _, k := range Keys() {
		want = append(want, k.Name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("example names\n%v\nthe key table has\n%v", names, want)
	}

	// Read back through Load, the uncommented example gives the defaults.
	const required = "server:\n  base_url: https://signd.example\npkcs11:\n  pin: \"1234\"\n"
	_, defaults, err := loadYAML(t, required)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvName("pkcs11.pin"), "1234")
	_, fromExample, err := loadYAML(t, strings.Replace(uncommented, "  base_url: \"\"\n", "  base_url: https://signd.example\n", 1))
	if err != nil {
		t.Fatalf("the uncommented example does not load: %v", err)
	}
	if got, want := fromExample.Settings(), defaults.Settings(); len(got) != len(want) {
		t.Fatalf("%d settings from the example, %d by default", len(got), len(want))
	} else {
		for i := range got {
			if !sameValue(got[i], want[i]) {
				t.Errorf("%s: example gives %#v, default is %#v", got[i].Key, got[i].Value, want[i].Value)
			}
		}
	}
}

// sameValue compares settings, an empty list equal to none.
func sameValue(a, b Setting) bool {
	if a.Key != b.Key {
		return false
	}
	as, aList := a.Value.([]string)
	bs, bList := b.Value.([]string)
	if aList && bList {
		return slices.Equal(as, bs)
	}
	return reflect.DeepEqual(a.Value, b.Value)
}

// TestExampleSet: keys of set are written uncommented with their value, in
// uncommented sections; everything else stays commented.
func TestExampleSet(t *testing.T) {
	text, err := Example(map[string]string{"store.path": "/var/lib/signd/signd.db", "server.tls.cert_file": "/etc/signd/tls.pem"})
	if err != nil {
		t.Fatal(err)
	}
	flat := parseExample(t, string(text))
	want := map[string]any{"store.path": "/var/lib/signd/signd.db", "server.tls.cert_file": "/etc/signd/tls.pem"}
	if !reflect.DeepEqual(flat, want) {
		t.Errorf("example sets %v, want %v", flat, want)
	}
}

func TestExampleSetRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string
	}{
		{"unknown key", map[string]string{"store.paht": "/x"}, "config example: unknown key store.paht"},
		{"section, not a key", map[string]string{"store": "/x"}, "config example: unknown key store"},
		{"not a string key", map[string]string{"server.shutdown_timeout": "1s"}, "config example: server.shutdown_timeout is not a string key; only string keys can be set"},
		{"value of several lines", map[string]string{"store.path": "/x\nserver:\n  listen: 0.0.0.0:1"}, `config example: store.path: value "/x\nserver:\n  listen: 0.0.0.0:1" does not fit on one line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Example(tc.set)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLoadRefusesHostileFile: a configuration path naming a device, a
// FIFO, a directory or a huge file is refused at once with its reason,
// never read until memory runs out or a writer comes.
func TestLoadRefusesHostileFile(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := writeFile(t, "big.yaml", "# "+strings.Repeat("x", MaxFileBytes)+"\n", 0o600)
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "config: /dev/zero is not a regular file"},
		{fifo, "config: " + fifo + " is not a regular file"},
		{dir, "config: " + dir + " is not a regular file"},
		{big, fmt.Sprintf("config: %s is larger than %d bytes", big, MaxFileBytes)},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(Options{File: tc.path, SearchPaths: []string{}})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != tc.want {
				t.Errorf("%s: got %v, want %q", tc.path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Load still reading after 10 s", tc.path)
		}
	}
}

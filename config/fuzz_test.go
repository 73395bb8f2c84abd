package config

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// FuzzLoad loads arbitrary bytes as the configuration file. Load never
// panics; it fails with a plain error naming the file (unreadable YAML) or
// an *Error whose every problem says what is wrong, and no problem of
// pkcs11.pin or server.base_url repeats the PIN or the URL's password. A
// configuration it accepts validates, and written back as YAML loads to
// exactly the same settings (round trip).
func FuzzLoad(f *testing.F) {
	for _, k := range Keys() { // the host environment must not leak in
		f.Setenv(k.Env(), "")
	}
	fixtures, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range fixtures {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"server:\n  base_url: https://admin:hunter2-secret@sign.example.org\npkcs11:\n  pin: \"0123\"\n",
		"pkcs11:\n  pin: [\"s3cr3t-pin\"]\n", "pkcs11:\n  pin: {a: s3cr3t-pin}\n", "pkcs11:\n  pin: 0x1234\n",
		"server:\n  base_url: http://localhost:8443/\n  trusted_proxies: \"10.0.0.0/8, 192.0.2.7\"\npkcs11:\n  pin: \"1234\"\n",
		"csc:\n  max_hashes_per_request: 18446744073709551615\n", "server:\n  body_limit_bytes: 1e400\n",
		"a: &a [*a]\n", "- 1\n- 2\n", "", "server: [\n",
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "signd.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Options{File: path, SearchPaths: []string{}})
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				if !strings.Contains(err.Error(), path) {
					t.Fatalf("%q: error does not name the file: %v", data, err)
				}
				return
			}
			if ce.Source != path || len(ce.Problems) == 0 {
				t.Fatalf("%q: %+v", data, ce)
			}
			pin, password := secretsOf(data)
			for _, p := range ce.Problems {
				if p.Msg == "" && !p.Unknown || p.Error() == "" {
					t.Fatalf("%q: problem without a description: %+v", data, p)
				}
				if pin != "" && p.Key == "pkcs11.pin" && strings.Contains(p.Msg, pin) {
					t.Fatalf("%q: problem repeats the PIN: %s", data, p.Error())
				}
				if password != "" && p.Key == "server.base_url" && strings.Contains(p.Msg, password) {
					t.Fatalf("%q: problem repeats the base URL's password: %s", data, p.Error())
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: loaded, but does not validate: %v", data, err)
		}
		out, err := yaml.Marshal(settingsYAML(c))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := Load(Options{File: path, SearchPaths: []string{}})
		if err != nil {
			t.Fatalf("%q written back as\n%s\ndoes not load: %v", data, out, err)
		}
		if !reflect.DeepEqual(again.Settings(), c.Settings()) {
			t.Fatalf("%q written back as\n%s\nloads as %v, want %v", data, out, again.Settings(), c.Settings())
		}
	})
}

// secretsOf returns the PIN and the base URL's password a file sets, when
// they are strings long enough to be recognised in a message.
func secretsOf(data []byte) (pin, password string) {
	var doc struct {
		Server struct {
			BaseURL any `yaml:"base_url"`
		}
		PKCS11 struct {
			PIN any `yaml:"pin"`
		} `yaml:"pkcs11"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return "", ""
	}
	if s, ok := doc.PKCS11.PIN.(string); ok && len(s) >= 4 {
		pin = s
	}
	if s, ok := doc.Server.BaseURL.(string); ok {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && len(p) >= 4 {
				password = p
			}
		}
	}
	return pin, password
}

// settingsYAML writes c's settings as a nested YAML document, each value
// in the form the file format documents (durations with a unit, the PIN as
// a string).
func settingsYAML(c *Config) map[string]any {
	root := map[string]any{}
	for _, s := range c.Settings() {
		var v any
		switch x := s.Value.(type) {
		case Secret:
			v = x.Reveal()
		case time.Duration:
			v = x.String()
		case []string:
			if len(x) == 0 {
				continue
			}
			v = x
		default:
			v = x
		}
		m, parts := root, strings.Split(s.Key, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	return root
}

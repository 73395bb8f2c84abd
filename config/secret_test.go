package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const pinValue = "s3cr3t-PIN-0042"

// leaks reports whether out contains the PIN in clear or in any encoding a
// printout might use.
func leaks(out string) bool {
	for _, enc := range []string{pinValue, fmt.Sprintf("%x", pinValue), fmt.Sprintf("%X", pinValue)} {
		if strings.Contains(out, enc) {
			return true
		}
	}
	return false
}

func TestSecretFormatting(t *testing.T) {
	s := Secret(pinValue)
	for _, verb := range []string{"%v", "%s", "%q", "%x", "%X", "%#v", "%+v", "%d", "%10s", "%-12v", "%.3s"} {
		out := fmt.Sprintf(verb, s)
		if leaks(out) {
			t.Errorf("fmt %s leaks: %s", verb, out)
		}
		if !strings.Contains(out, "REDACTED") && verb != "%x" && verb != "%X" && verb != "%.3s" {
			t.Errorf("fmt %s = %q, want the placeholder", verb, out)
		}
	}
	for _, tc := range []struct{ verb, want string }{
		{"%v", "[REDACTED]"},
		{"%s", "[REDACTED]"},
		{"%q", `"[REDACTED]"`},
		{"%#v", `config.Secret("[REDACTED]")`},
		{"%12s", "  [REDACTED]"},
	} {
		if got := fmt.Sprintf(tc.verb, s); got != tc.want {
			t.Errorf("fmt %s = %q, want %q", tc.verb, got, tc.want)
		}
	}
	if got := fmt.Sprint(s) + fmt.Sprintln(s) + s.String() + s.GoString(); leaks(got) {
		t.Errorf("Sprint/String leak: %s", got)
	}
	if s.Reveal() != pinValue {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
}

func TestEmptySecretStaysVisible(t *testing.T) {
	var s Secret
	for verb, want := range map[string]string{"%v": "", "%s": "", "%q": `""`, "%#v": `config.Secret("")`} {
		if got := fmt.Sprintf(verb, s); got != want {
			t.Errorf("empty %s = %q, want %q", verb, got, want)
		}
	}
	if b, _ := json.Marshal(s); string(b) != `""` {
		t.Errorf("empty json = %s", b)
	}
}

func configWithPIN() *Config {
	return &Config{
		Server: ServerConfig{Listen: "127.0.0.1:8443", BaseURL: "https://sign.example.org"},
		PKCS11: PKCS11Config{Module: "/usr/lib/softhsm/libsofthsm2.so", TokenLabel: "signd", PIN: Secret(pinValue)},
		Log:    LogConfig{Level: "info", Format: "json"},
	}
}

func TestSecretInsideStructs(t *testing.T) {
	c := configWithPIN()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for name, v := range map[string]any{"value": *c, "pointer": c, "section": c.PKCS11, "section pointer": &c.PKCS11, "slice": []Secret{c.PKCS11.PIN}, "map": map[string]Secret{"pin": c.PKCS11.PIN}} {
			if out := fmt.Sprintf(verb, v); leaks(out) {
				t.Errorf("%s of %s leaks: %s", verb, name, out)
			}
		}
	}
	if out := fmt.Sprintf("%+v", c.PKCS11); !strings.Contains(out, "PIN:[REDACTED]") {
		t.Errorf("%%+v = %s, want PIN:[REDACTED]", out)
	}
	if out := fmt.Sprintf("%#v", c.PKCS11); !strings.Contains(out, `PIN:config.Secret("[REDACTED]")`) {
		t.Errorf("%%#v = %s", out)
	}
}

func TestSecretJSONAndText(t *testing.T) {
	c := configWithPIN()
	for name, v := range map[string]any{"config": c, "secret": c.PKCS11.PIN, "map value": map[string]Secret{"pin": c.PKCS11.PIN}, "settings": c.Settings()} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", name, err)
		}
		if leaks(string(b)) || !strings.Contains(string(b), "[REDACTED]") {
			t.Errorf("json of %s = %s", name, b)
		}
	}
	if b, _ := c.PKCS11.PIN.MarshalText(); string(b) != "[REDACTED]" {
		t.Errorf("MarshalText = %s", b)
	}
	// Round trip: redaction is one-way, the PIN does not survive JSON.
	var back Config
	b, _ := json.Marshal(c.Redacted())
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.PKCS11.PIN.Reveal() != "[REDACTED]" {
		t.Errorf("PIN after JSON round trip = %q", back.PKCS11.PIN.Reveal())
	}
}

func TestSecretSlog(t *testing.T) {
	c := configWithPIN()
	var buf bytes.Buffer
	for name, h := range map[string]slog.Handler{
		"json": slog.NewJSONHandler(&buf, nil),
		"text": slog.NewTextHandler(&buf, nil),
	} {
		buf.Reset()
		log := slog.New(h)
		log.Info("starting", "config", c, "pin", c.PKCS11.PIN, slog.Any("pkcs11", c.PKCS11))
		log.Info("value", "config", *c)
		log.Info("group", slog.Group("hsm", "pin", c.PKCS11.PIN))
		log.With("pin", c.PKCS11.PIN).Info("with")
		out := buf.String()
		if leaks(out) {
			t.Errorf("%s handler leaks:\n%s", name, out)
		}
		if !strings.Contains(out, "[REDACTED]") {
			t.Errorf("%s handler shows no placeholder:\n%s", name, out)
		}
	}
}

func TestRedactedIsACopy(t *testing.T) {
	c := configWithPIN()
	r := c.Redacted()
	r.Server.Listen = "changed"
	if c.Server.Listen == "changed" {
		t.Error("Redacted shares memory with the original")
	}
	if r.PKCS11.PIN.Reveal() != pinValue {
		t.Error("Redacted dropped the value; printing is what redacts")
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	pins := map[string]string{"SOFTHSM_USER_PIN": "user-1234", "SOFTHSM_SO_PIN": "so-1234"}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		code     int
		stdout   string
		stderrIn string
	}{
		{"no arguments", nil, pins, 2, "", "usage: init-token DIR LABEL"},
		{"one argument", []string{dir}, pins, 2, "", "usage: init-token DIR LABEL"},
		{"module and a directory", []string{"-module", "/x.so", dir, "t"}, pins, 2, "", "usage: init-token DIR LABEL"},
		{"slot without a module", []string{"-slot", "3", dir, "t"}, pins, 2, "", "usage: init-token DIR LABEL"},
		{"unknown flag", []string{"-pin", "1234", "t"}, pins, 2, "", "flag provided but not defined: -pin"},
		{"malformed slot", []string{"-module", "/x.so", "-slot", "three", "t"}, pins, 2, "", "invalid value"},
		{"missing module", []string{"-module", filepath.Join(dir, "missing.so"), "t"}, pins, 1, "", "cannot load the PKCS#11 module"},
		{"no user PIN", []string{dir, "t"}, map[string]string{"SOFTHSM_SO_PIN": "so-1234"}, 2, "", "set SOFTHSM_USER_PIN"},
		{"no SO PIN", []string{dir, "t"}, map[string]string{"SOFTHSM_USER_PIN": "user-1234"}, 2, "", "set SOFTHSM_SO_PIN"},
		{"short PIN", []string{dir, "t"}, map[string]string{"SOFTHSM_USER_PIN": "123", "SOFTHSM_SO_PIN": "so-1234"}, 1, "", "at least 4 characters"},
		{"label too long", []string{dir, strings.Repeat("l", 33)}, pins, 1, "", "longer than 32 bytes"},
		{"created", []string{dir, "cmd-test"}, pins, 0, "SOFTHSM2_CONF=" + filepath.Join(dir, "softhsm2.conf") + "\n", ""},
		{"reused", []string{dir, "cmd-test"}, pins, 0, "SOFTHSM2_CONF=" + filepath.Join(dir, "softhsm2.conf") + "\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, env(tt.env), &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.stdout || !strings.Contains(stderr.String(), tt.stderrIn) {
				t.Errorf("run = %d, stdout %q, stderr %q; want %d, %q, ...%s...", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderrIn)
			}
			if strings.Contains(stderr.String(), "1234") {
				t.Errorf("a PIN was printed: %s", stderr.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "tokens")); err != nil {
		t.Errorf("token directory: %v", err)
	}
}

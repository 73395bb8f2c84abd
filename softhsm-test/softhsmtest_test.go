package softhsmtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestSetupCreatesTokenInOwnDir(t *testing.T) {
	dir := t.TempDir()
	tok, err := Setup(dir, "unit-test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Conf, dir) {
		t.Fatalf("config %s outside %s", tok.Conf, dir)
	}
	if got := os.Getenv("SOFTHSM2_CONF"); got != tok.Conf {
		t.Fatalf("SOFTHSM2_CONF = %q, want %q", got, tok.Conf)
	}
	conf, err := os.ReadFile(tok.Conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conf), "directories.tokendir = "+dir+"/tokens") {
		t.Fatalf("tokendir not inside %s:\n%s", dir, conf)
	}
	out, err := exec.Command("softhsm2-util", "--show-slots").CombinedOutput()
	if err != nil {
		t.Fatalf("softhsm2-util: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "unit-test") {
		t.Fatalf("token not listed:\n%s", out)
	}
	// A second run with the same label reuses the token.
	again := &Token{Dir: dir, Label: "unit-test", PIN: tok.PIN, SOPIN: tok.SOPIN, Module: tok.Module}
	if err := again.create(); err != nil {
		t.Fatalf("second run: %v", err)
	}
	out, _ = exec.Command("softhsm2-util", "--show-slots").CombinedOutput()
	if n := strings.Count(string(out), "unit-test"); n != 1 {
		t.Fatalf("token listed %d times after second run", n)
	}
}

func TestSetupRefusesEmptyLabel(t *testing.T) {
	if _, err := Setup(t.TempDir(), ""); err == nil {
		t.Fatal("empty label accepted")
	}
}

package softhsmtest

import (
	"os"
	"os/exec"
	"slices"
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

func TestRemoveAndRestore(t *testing.T) {
	dir := t.TempDir()
	tok, err := Setup(dir, "remove-me")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tok.AddToken("remove-me-not")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := tok.ObjectDir()
	if err != nil {
		t.Fatal(err)
	}
	otherObj, err := other.ObjectDir()
	if err != nil || otherObj == obj {
		t.Fatalf("ObjectDir of the other token: %q %v (first %q)", otherObj, err, obj)
	}
	restore, err := tok.Remove()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(obj); !os.IsNotExist(err) {
		t.Fatalf("token directory still there: %v", err)
	}
	if labels := slotLabels(t); slices.Contains(labels, "remove-me") || !slices.Contains(labels, "remove-me-not") {
		t.Fatalf("token labels after Remove: %q", labels)
	}
	if _, err := tok.Remove(); err == nil {
		t.Error("removed twice")
	}
	for range 2 {
		if err := restore(); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := tok.ObjectDir(); err != nil || got != obj {
		t.Fatalf("after restore: %q %v", got, err)
	}
	if labels := slotLabels(t); !slices.Contains(labels, "remove-me") {
		t.Fatalf("token labels after restore: %q", labels)
	}
}

// slotLabels lists the token labels softhsm2-util shows.
func slotLabels(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("softhsm2-util", "--show-slots").CombinedOutput()
	if err != nil {
		t.Fatalf("softhsm2-util: %v: %s", err, out)
	}
	var labels []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Label:" {
			labels = append(labels, f[1])
		}
	}
	return labels
}

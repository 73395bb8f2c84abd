package safepath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/internal/safepath/safepathtest"
)

// fileData is what the judged files hold; only their owner and mode count.
var fileData = []byte("x")

func TestPolicy(t *testing.T) {
	euid := os.Geteuid()
	pol := Policy{EUID: euid, Key: "k", Harm: "could do harm"}
	tests := []struct {
		name  string
		setup func(t *testing.T, base string) string // the file to judge
		want  string                                 // "" = accepted
	}{
		{"0644 in 0755", func(t *testing.T, b string) string {
			return safepathtest.WriteFile(t, safepathtest.Mkdir(t, b+"/d", 0o755)+"/f", fileData, 0o644)
		}, ""},
		{"group-writable file", func(t *testing.T, b string) string {
			return safepathtest.WriteFile(t, b+"/f", fileData, 0o664)
		}, "k: file " + "BASE/f is writable by group or others (mode 0664): another local user could do harm (run: chmod go-w BASE/f)"},
		{"world-writable directory", func(t *testing.T, b string) string {
			return safepathtest.WriteFile(t, safepathtest.Mkdir(t, b+"/d", 0o777)+"/f", fileData, 0o600)
		}, "k: parent directory BASE/d is writable by group or others (mode 0777)"},
		{"sticky directory", func(t *testing.T, b string) string {
			return safepathtest.WriteFile(t, safepathtest.Mkdir(t, b+"/d", 0o777|os.ModeSticky)+"/f", fileData, 0o600)
		}, ""},
		{"link to a group-writable file", func(t *testing.T, b string) string {
			safepathtest.WriteFile(t, b+"/real", fileData, 0o620)
			if err := os.Symlink(b+"/real", b+"/f"); err != nil {
				t.Fatal(err)
			}
			return b + "/f"
		}, "k: file BASE/real is writable by group or others (mode 0620)"},
		{"missing", func(t *testing.T, b string) string { return b + "/none" }, "k: lstat BASE/none: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			p := tt.setup(t, base)
			real, err := pol.File(p)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("File(%s): %v", p, err)
				}
				if want, _ := filepath.EvalSymlinks(p); real != want {
					t.Errorf("File(%s) = %s, want %s", p, real, want)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "BASE", base)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("File(%s) = %v,\nwant %q", p, err, want)
			}
		})
	}
}

func TestPolicyOwner(t *testing.T) {
	safepathtest.NeedRoot(t)
	base := t.TempDir()
	f := safepathtest.WriteFile(t, safepathtest.Mkdir(t, base+"/d", 0o755)+"/f", fileData, 0o600)
	safepathtest.Chown(t, f, 65534, 65534)
	pol := Policy{EUID: 0, Harm: "could do harm"}
	want := "file " + f + " is owned by uid 65534, not by root or uid 0 that runs signd: that user could do harm (run: chown 0 " + f + ")"
	if _, err := pol.File(f); err == nil || err.Error() != want {
		t.Fatalf("File = %v,\nwant %q", err, want)
	}
	// The owner itself may.
	if _, err := (Policy{EUID: 65534}).File(f); err != nil {
		t.Fatalf("File as its owner: %v", err)
	}
	// A directory above of another user.
	safepathtest.Chown(t, f, 0, 0)
	safepathtest.Chown(t, base+"/d", 65534, 65534)
	if _, err := pol.File(f); err == nil || !strings.HasPrefix(err.Error(), "parent directory "+base+"/d is owned by uid 65534") {
		t.Fatalf("File under another user's directory = %v", err)
	}
}

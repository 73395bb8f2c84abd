package safepath

import (
	"errors"
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
		{"link in a world-writable directory to a file in a safe one", func(t *testing.T, b string) string {
			f := safepathtest.WriteFile(t, safepathtest.Mkdir(t, b+"/d", 0o755)+"/f", fileData, 0o600)
			w := safepathtest.Mkdir(t, b+"/w", 0o777)
			if err := os.Symlink(f, w+"/f"); err != nil {
				t.Fatal(err)
			}
			return w + "/f"
		}, "k: parent directory BASE/w is writable by group or others (mode 0777): another local user could do harm (run: chmod go-w BASE/w)"},
		{"group-writable directory", func(t *testing.T, b string) string {
			return safepathtest.WriteFile(t, safepathtest.Mkdir(t, b+"/d", 0o770)+"/f", fileData, 0o600)
		}, "k: parent directory BASE/d is writable by group or others (mode 0770)"},
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

// DataDir's Parents judges each directory up to /, as written and
// resolved; a directory not made yet is judged by the ones it would be
// made in; one writable by its group passes.
func TestCheck(t *testing.T) {
	base := t.TempDir()
	mine := safepathtest.Mkdir(t, base+"/mine", 0o700)
	group := safepathtest.Mkdir(t, base+"/group", 0o770)
	open := safepathtest.Mkdir(t, base+"/open", 0o777)
	sticky := safepathtest.Mkdir(t, base+"/sticky", 0o777|os.ModeSticky)
	if err := os.Symlink(open, filepath.Join(base, "toopen")); err != nil {
		t.Fatal(err)
	}
	type test struct {
		dir string
		bad string // the directory named, "" = safe
	}
	tests := []test{
		{mine, ""},
		{filepath.Join(mine, "not", "yet"), ""},
		{group, ""},
		{sticky, ""},
		{filepath.Join(sticky, "not-yet"), ""},
		{open, open},
		{filepath.Join(open, "not-yet"), open},
		{filepath.Join(base, "toopen", "not-yet"), open},
	}
	if os.Geteuid() == 0 { // hand a directory, and a link to a safe one, to uid 65534
		other := safepathtest.Mkdir(t, base+"/other", 0o755)
		safepathtest.Chown(t, other, 65534, 65534)
		link := filepath.Join(base, "tomine")
		if err := os.Symlink(mine, link); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(link, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, test{filepath.Join(other, "not-yet"), other}, test{filepath.Join(link, "not-yet"), link})
	}
	pol := DataDir(os.Geteuid())
	for _, tt := range tests {
		err := pol.Parents(tt.dir)
		var se *Error
		switch {
		case tt.bad == "" && err != nil:
			t.Errorf("Parents(%s) = %v, want safe", tt.dir, err)
		case tt.bad != "" && !errors.As(err, &se):
			t.Errorf("Parents(%s) = %v, want an *Error naming %s", tt.dir, err, tt.bad)
		case tt.bad != "" && se.Path != tt.bad:
			t.Errorf("Parents(%s) names %s (%v), want %s", tt.dir, se.Path, err, tt.bad)
		}
	}
}

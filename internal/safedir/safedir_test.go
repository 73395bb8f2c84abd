package safedir_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/signd/signd/internal/safedir"
)

// Check judges each directory up to /, as written and resolved; a
// directory not made yet is judged by the ones it would be made in.
func TestCheck(t *testing.T) {
	base := t.TempDir()
	mk := func(p string, mode os.FileMode, uid int) string {
		t.Helper()
		p = filepath.Join(base, p)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Lchown(p, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	mine := mk("mine", 0o700, -1)
	open := mk("open", 0o777, -1)
	sticky := mk("sticky", 0o777|os.ModeSticky, -1)
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
		{sticky, ""},
		{filepath.Join(sticky, "not-yet"), ""},
		{open, open},
		{filepath.Join(open, "not-yet"), open},
		{filepath.Join(base, "toopen", "not-yet"), open},
	}
	if os.Geteuid() == 0 { // hand a directory to uid 65534
		other := mk("other", 0o755, 65534)
		tests = append(tests, test{filepath.Join(other, "not-yet"), other})
	}
	for _, tt := range tests {
		err := safedir.Check(tt.dir)
		var se *safedir.Error
		switch {
		case tt.bad == "" && err != nil:
			t.Errorf("Check(%s) = %v, want safe", tt.dir, err)
		case tt.bad != "" && !errors.As(err, &se):
			t.Errorf("Check(%s) = %v, want an *Error naming %s", tt.dir, err, tt.bad)
		case tt.bad != "" && se.Dir != tt.bad:
			t.Errorf("Check(%s) names %s (%v), want %s", tt.dir, se.Dir, err, tt.bad)
		}
	}
}

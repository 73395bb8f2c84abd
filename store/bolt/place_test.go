package bolt_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/internal/safepath/safepathtest"
	"github.com/signd/signd/store/bolt"
)

// nobody is the uid (and gid) the tests hand directories to: another
// local user, such as signd's own user seen from root.
const nobody = 65534

// openErr opens path and returns the error, closing a DB that opened.
func openErr(t *testing.T, path string, readOnly bool) error {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{ReadOnly: readOnly})
	if err == nil {
		_ = db.Close()
	}
	return err
}

// wantUnsafe fails unless err wraps ErrUnsafeFile and says each of frags.
func wantUnsafe(t *testing.T, err error, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, bolt.ErrUnsafeFile) {
		t.Errorf("error %v does not wrap ErrUnsafeFile", err)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

// A symbolic link at the store path is refused, whatever it points to:
// signd as root would create, write or read the link's target, and the
// store's directory belongs to signd's user, who can put one there. A
// dangling link is not followed to create its target.
func TestOpenRefusesSymlink(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		name := map[bool]string{false: "read-write", true: "read-only"}[readOnly]
		t.Run("dangling/"+name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "nologin")
			path := filepath.Join(dir, "signd.db")
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			wantUnsafe(t, openErr(t, path, readOnly), path+" is a symbolic link", target)
			if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the link's target %s: %v, want it not created", target, err)
			}
		})
		// The target is a valid store owned by this uid, mode 0600: the
		// ownership check of the file alone would let it through.
		t.Run("existing store/"+name, func(t *testing.T) {
			target := existingStore(t, 0o600)
			before, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "signd.db")
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			wantUnsafe(t, openErr(t, path, readOnly), path+" is a symbolic link", "set store.path to the file itself")
			if after, _ := os.ReadFile(target); !bytes.Equal(before, after) {
				t.Error("the link's target changed")
			}
		})
	}
}

// The store's directory, and every directory on the way to it, as written
// and with links resolved, must be owned by root or the process's uid:
// another owner could put a link, or a hard link of a file of root's, at
// the store path between two commands. Creating, writing and reading are
// all refused; a missing store is not created, and the message says how
// to run the command as the directory's owner.
func TestOpenRefusesOtherUsersDirectory(t *testing.T) {
	safepathtest.NeedRoot(t)
	tests := []struct {
		name     string
		setup    func(t *testing.T, base string) (path string) // base is root's, 0700
		existing bool                                          // path holds a store of root's
		want     []string                                      // BASE stands for base
	}{
		{"missing store", func(t *testing.T, base string) string {
			return filepath.Join(mkdirOwned(t, base, "d", nobody), "signd.db")
		}, false, []string{"no store at BASE/d/signd.db", "in BASE/d, which uid 65534", "start `signd serve` once", "run this command as"}},
		{"store of root's", func(t *testing.T, base string) string {
			d := mkdirOwned(t, base, "d", 0)
			putStore(t, filepath.Join(d, "signd.db"))
			if err := os.Chown(d, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(d, "signd.db")
		}, true, []string{"BASE/d/signd.db is in BASE/d, which uid 65534", "not root or uid 0", "run this command as"}},
		// The packaged layout seen from root: signd's file in signd's
		// directory. Root is told to run the command as signd, not to take
		// the file over (chown would lock the daemon out).
		{"store of the directory's owner", func(t *testing.T, base string) string {
			d := mkdirOwned(t, base, "d", 0)
			putStore(t, filepath.Join(d, "signd.db"))
			for _, p := range []string{filepath.Join(d, "signd.db"), d} {
				if err := os.Chown(p, nobody, nobody); err != nil {
					t.Fatal(err)
				}
			}
			return filepath.Join(d, "signd.db")
		}, true, []string{"BASE/d/signd.db is in BASE/d, which uid 65534", "run this command as"}},
		{"link to a directory of root's, in another user's", func(t *testing.T, base string) string {
			d := mkdirOwned(t, base, "d", nobody)
			real := mkdirOwned(t, base, "real", 0)
			if err := os.Symlink(real, filepath.Join(d, "sub")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(d, "sub", "signd.db")
		}, false, []string{"no store at ", "which uid 65534"}},
		{"root's link to another user's directory", func(t *testing.T, base string) string {
			d := mkdirOwned(t, base, "d", nobody)
			if err := os.Symlink(d, filepath.Join(base, "l")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(base, "l", "signd.db")
		}, false, []string{"no store at ", "in BASE/d, which uid 65534"}},
		{"other user's parent", func(t *testing.T, base string) string {
			p := mkdirOwned(t, base, "p", nobody)
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(mkdirOwned(t, p, "d", 0), "signd.db")
		}, false, []string{"no store at ", "in BASE/p, which uid 65534"}},
	}
	for _, tt := range tests {
		for _, readOnly := range []bool{false, true} {
			if readOnly && !tt.existing {
				continue // a read-only open of no file fails anyway
			}
			t.Run(tt.name+map[bool]string{false: "", true: "/read-only"}[readOnly], func(t *testing.T) {
				base := t.TempDir()
				path := tt.setup(t, base)
				before, _ := os.ReadFile(path)
				var frags []string
				for _, f := range tt.want {
					frags = append(frags, strings.ReplaceAll(f, "BASE", base))
				}
				err := openErr(t, path, readOnly)
				wantUnsafe(t, err, frags...)
				if err != nil && strings.Contains(err.Error(), "chown") {
					t.Errorf("error %q tells root to take the file over", err)
				}
				after, rerr := os.ReadFile(path)
				if !tt.existing && !errors.Is(rerr, os.ErrNotExist) {
					t.Errorf("%s: %v, want it not created", path, rerr)
				}
				if tt.existing && !bytes.Equal(before, after) {
					t.Error("the store changed")
				}
			})
		}
	}
}

// Directories others cannot tamper with still hold a store: a link this
// uid made to a directory of its own, and a world-writable directory with
// the sticky bit (such as /tmp). A world-writable one without it is
// refused, and no store is created in it.
func TestOpenPlaceAllowed(t *testing.T) {
	base := t.TempDir()
	real := mkdirOwned(t, base, "real", os.Geteuid())
	if err := os.Symlink(real, filepath.Join(base, "l")); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, filepath.Join(base, "l", "signd.db"), false); err != nil {
		t.Errorf("store through a link of this uid's: %v", err)
	}
	sticky := mkdirOwned(t, base, "tmp", os.Geteuid())
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, filepath.Join(sticky, "signd.db"), false); err != nil {
		t.Errorf("store in a sticky world-writable directory: %v", err)
	}
	open := mkdirOwned(t, base, "open", os.Geteuid())
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(open, "signd.db")
	wantUnsafe(t, openErr(t, path, false), "which every local user can write (mode 0777)", "chmod o-w "+open)
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v, want it not created", path, err)
	}
}

// mkdirOwned makes dir/name (0700) and hands it to uid.
func mkdirOwned(t *testing.T, dir, name string, uid int) string {
	t.Helper()
	p := safepathtest.Mkdir(t, filepath.Join(dir, name), 0o700)
	if uid != os.Geteuid() {
		safepathtest.Chown(t, p, uid, uid)
	}
	return p
}

// putStore creates a valid store file at path.
func putStore(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

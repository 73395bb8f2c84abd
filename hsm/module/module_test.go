package module

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/internal/safepath/safepathtest"
)

// constructorC is a shared library whose constructor, run by dlopen(3)
// before any PKCS#11 call, leaves the file MARKER: a planted module's
// code execution.
const constructorC = `#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
	int fd = open(MARKER, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0)
		close(fd);
}
`

// A module that anyone but root or this user could change, or whose
// directory they could, is refused before dlopen: its constructor never
// runs. The same library where only root can change it is loaded (its
// constructor runs, then Open finds no C_GetFunctionList), so the marker
// does tell.
func TestOpenRefusesUntrustedModule(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build a library with a constructor")
	}
	base := t.TempDir()
	marker := filepath.Join(base, "constructor-ran")
	src := filepath.Join(base, "planted.c")
	if err := os.WriteFile(src, []byte(constructorC), 0o600); err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(base, "planted.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", `-DMARKER="`+marker+`"`, "-o", built, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	lib, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	// install copies the library to dir/name with mode, owned by uid (-1:
	// by this user).
	install := func(t *testing.T, dir, name string, mode os.FileMode, uid int) string {
		t.Helper()
		p := safepathtest.WriteFile(t, filepath.Join(dir, name), lib, mode)
		if uid >= 0 {
			safepathtest.Chown(t, p, uid, -1)
		}
		return p
	}
	tests := []struct {
		name     string
		needRoot bool
		// setup returns the module path and the path the refusal names.
		setup func(t *testing.T, dir string) (module, bad string)
		want  string
	}{
		{"owned by another user", true, func(t *testing.T, d string) (string, string) {
			p := install(t, d, "libplanted.so", 0o755, 65534)
			return p, p
		}, "pkcs11.module: file %s is owned by uid 65534, not by root or uid 0 that runs signd: that user could change the code signd loads and runs (as root in root's signd commands) (run: chown 0 %s)"},
		{"group-writable", false, func(t *testing.T, d string) (string, string) {
			p := install(t, d, "libplanted.so", 0o775, -1)
			return p, p
		}, "pkcs11.module: file %s is writable by group or others (mode 0775)"},
		{"in a world-writable directory", false, func(t *testing.T, d string) (string, string) {
			w := safepathtest.Mkdir(t, filepath.Join(d, "w"), 0o777)
			return install(t, w, "libplanted.so", 0o755, -1), w
		}, "pkcs11.module: parent directory %s is writable by group or others (mode 0777)"},
		{"in a directory of another user", true, func(t *testing.T, d string) (string, string) {
			o := safepathtest.Mkdir(t, filepath.Join(d, "o"), 0o755)
			p := install(t, o, "libplanted.so", 0o755, -1)
			safepathtest.Chown(t, o, 65534, 65534)
			return p, o
		}, "pkcs11.module: parent directory %s is owned by uid 65534"},
		{"a trusted link to another user's library", true, func(t *testing.T, d string) (string, string) {
			p := install(t, d, "libplanted.so.1", 0o755, 65534)
			link := filepath.Join(d, "libplanted.so")
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return link, p
		}, "pkcs11.module: file %s is owned by uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needRoot {
				safepathtest.NeedRoot(t)
			}
			module, bad := tt.setup(t, t.TempDir())
			m, err := Open(module)
			if err == nil {
				_ = m.Release()
				t.Fatalf("Open(%s) loaded it", module)
			}
			want := strings.ReplaceAll(tt.want, "%s", bad)
			if !errors.Is(err, ckr.ErrModule) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Open(%s) = %v,\nwant %q", module, err, want)
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the library's constructor ran (%s: %v)", marker, err)
			}
		})
	}

	// The control: the same library where only root or this user can
	// change it is loaded, so its constructor runs.
	trusted := install(t, t.TempDir(), "libplanted.so", 0o755, -1)
	if m, err := Open(trusted); err == nil {
		_ = m.Release()
		t.Fatalf("Open(%s) took a library without C_GetFunctionList", trusted)
	} else if !strings.Contains(err.Error(), "cannot load") {
		t.Fatalf("Open(%s) = %v, want the loader's refusal", trusted, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the trusted library was not loaded: %v", err)
	}
}

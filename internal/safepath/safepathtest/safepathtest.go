package safepathtest

import (
	"os"
	"testing"
)

// Mkdir makes the directory dir with exactly mode and returns dir.
func Mkdir(t testing.TB, dir string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	Chmod(t, dir, mode)
	return dir
}

// WriteFile writes data to path with exactly mode and returns path.
func WriteFile(t testing.TB, path string, data []byte, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	Chmod(t, path, mode)
	return path
}

// Chmod sets path's mode (os.Chmod: the permission, sticky bits included).
func Chmod(t testing.TB, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// Chown gives path to uid and gid (-1 keeps one); it needs root, so the
// caller skips first when it is not (NeedRoot).
func Chown(t testing.TB, path string, uid, gid int) {
	t.Helper()
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// NeedRoot skips t unless it runs as root, which giving a file to another
// user takes.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
}

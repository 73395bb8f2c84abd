package bolt_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/store/bolt"
)

// existingStore creates a valid store file, closes it and gives it mode.
func existingStore(t *testing.T, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// The store holds password and PIN hashes, client secret hashes, the
// HMAC keys and the audit chain: a file other local users can read or
// write (OWASP ASVS V14, file permissions) is refused, with the command
// that fixes it.
func TestOpenRefusesOpenPermissions(t *testing.T) {
	tests := []struct {
		mode os.FileMode
		want string // "" = opens
	}{
		{0o600, ""},
		{0o644, "has mode 0644"},
		{0o640, "has mode 0640"},
		{0o604, "has mode 0604"},
		{0o620, "has mode 0620"},
		{0o602, "has mode 0602"},
		{0o666, "has mode 0666"},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			path := existingStore(t, tt.mode)
			db, err := bolt.Open(path, bolt.Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("mode %#o: %v", tt.mode, err)
				}
				_ = db.Close()
				return
			}
			if err == nil {
				_ = db.Close()
				t.Fatalf("mode %#o: Open succeeded", tt.mode)
			}
			if !errors.Is(err, bolt.ErrUnsafeFile) {
				t.Errorf("error %v does not wrap ErrUnsafeFile", err)
			}
			for _, frag := range []string{path, tt.want, "chmod 600 " + path} {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q does not contain %q", err, frag)
				}
			}
			// Refused before bbolt touched it: the mode is what it was.
			if fi, _ := os.Stat(path); fi.Mode().Perm() != tt.mode {
				t.Errorf("mode changed to %#o", fi.Mode().Perm())
			}
		})
	}
}

func TestOpenRefusesForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the store file to another uid (CI runs as root)")
	}
	path := existingStore(t, 0o600)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, bolt.Options{})
	if err == nil {
		_ = db.Close()
		t.Fatal("Open of a file owned by uid 65534 succeeded")
	}
	if !errors.Is(err, bolt.ErrUnsafeFile) {
		t.Errorf("error %v does not wrap ErrUnsafeFile", err)
	}
	for _, frag := range []string{path, "owned by uid 65534", "chown 0 " + path} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q does not contain %q", err, frag)
		}
	}
}

func TestOpenRefusesNonRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signd.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, bolt.Options{})
	if err == nil {
		_ = db.Close()
		t.Fatal("Open of a directory succeeded")
	}
	if !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("error %q does not say why", err)
	}
}

// The hint is pasted into a shell: a path with a space or a quote stays
// one word.
func TestOpenHintQuotesPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's here")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "signd.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := bolt.Open(path, bolt.Options{})
	want := "chmod 600 '" + strings.ReplaceAll(path, "'", `'\''`) + "'"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want the hint %s", err, want)
	}
	t.Log(err)
}

package bolt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// openHook is what bbolt opens the file with, after the checks of
// openFile: a link put at the path since then is not followed, a file
// judged missing is created only if still missing (O_EXCL), and a file
// judged present is never created. The checks ran on a path; these are
// the opens bbolt then makes of it.
func TestOpenHookRace(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "nologin")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, create := range []bool{true, false} {
		f, err := openHook(create)(link, os.O_RDWR|os.O_CREATE, fileMode)
		if err == nil {
			f.Close()
			t.Errorf("create %v: opened a dangling link", create)
		} else if !errors.Is(err, ErrUnsafeFile) {
			t.Errorf("create %v: error %v does not wrap ErrUnsafeFile", create, err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("create %v: the link's target: %v, want it not created", create, err)
		}
	}
	gone := filepath.Join(dir, "gone") // judged present, removed since
	if f, err := openHook(false)(gone, os.O_RDWR|os.O_CREATE, fileMode); err == nil {
		f.Close()
		t.Error("created a file judged present")
	}
	loose := filepath.Join(dir, "loose") // put there since, by someone else
	if err := os.WriteFile(loose, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := openHook(true)(loose, os.O_RDWR|os.O_CREATE, fileMode); err == nil {
		f.Close()
		t.Error("opened a file that appeared after it was judged missing")
	}
	if f, err := openHook(false)(loose, os.O_RDWR|os.O_CREATE, fileMode); err == nil {
		f.Close()
		t.Error("opened a file of mode 0644: the descriptor was not judged")
	}
}

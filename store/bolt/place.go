package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/signd/signd/internal/safepath"
)

// Where the store file is: signd opens it only where no other local user
// can put something in its place. The daemon runs as its own user (signd,
// owner of /var/lib/signd), while an operator's command that finds no
// daemon opens the file itself, often as root. Were the file a symbolic
// link, or in a directory another uid can write, that uid could point
// root's open, and bbolt's O_CREAT, at any file of the system: a dangling
// link to /etc/nologin made `signd user list` as root create it. So:
//
//   - the store path must not be a symbolic link (Lstat here, and
//     O_NOFOLLOW on every open of the file: checkFile's and bbolt's,
//     openHook), and the file bbolt opened is judged again by its
//     descriptor (fstat), so nothing can be swapped in between;
//   - a new file is created with O_CREAT|O_EXCL|O_NOFOLLOW only, never
//     through whatever is at the path;
//   - every directory on the way to it, as written and as resolved, is
//     owned by root or by the effective uid, and none is writable by
//     others unless sticky (checkPlace, internal/safepath's DataDir): otherwise
//     that directory's owner could rename a link or a hard link of
//     another file into place, or swap a directory of the path for a
//     link. This holds for reading too: signd, as root, reads only what
//     root put there.
//
// The operator runs a command against the store as the user who owns its
// directory: `runuser -u signd -- signd ...`.

// checkPlace refuses a store path whose directories another local user
// could change (safepath.DataDir). exists says whether the file is there,
// for the message: a missing store is named, with how to create it.
func checkPlace(path string, exists bool) error {
	err := safepath.DataDir(os.Geteuid()).Parents(filepath.Dir(path))
	var se *safepath.Error
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &se):
		return fmt.Errorf("store: open %s: %w", path, err)
	case se.Writable:
		return fmt.Errorf("%w: %s is in %s, which every local user can write (mode %#o): anyone could put a link to another file in its place (run: chmod o-w %s)",
			ErrUnsafeFile, path, se.Path, se.Mode.Perm(), shellQuote(se.Path))
	}
	who, as := safepath.Owner(se.UID)
	if !exists {
		return fmt.Errorf("%w: no store at %s, and signd does not create one as uid %d in %s, which %s owns: "+
			"start `signd serve` once (it creates the store as its own user), or run this command %s",
			ErrUnsafeFile, path, se.EUID, se.Path, who, as)
	}
	return fmt.Errorf("%w: %s is in %s, which %s owns, not root or uid %d of this process: that user could put a link to another file in its place; "+
		"run this command %s",
		ErrUnsafeFile, path, se.Path, who, se.EUID, as)
}

// symlinkError is the refusal of a symbolic link at the store path.
func symlinkError(path string) error {
	to := "somewhere"
	if t, err := os.Readlink(path); err == nil {
		to = strconv.Quote(t)
	}
	return fmt.Errorf("%w: %s is a symbolic link (to %s); signd opens only a regular file at store.path, never through a link (set store.path to the file itself)",
		ErrUnsafeFile, path, to)
}

// openHook is bbolt's Options.OpenFile for a file that checkPath
// found (create false) or found missing (create true, read-write): it
// never follows a link, creates only a new file (O_EXCL), never creates
// one that was judged to exist, and judges the file it opened by its
// descriptor, so the file bbolt maps is the one that passed.
func openHook(create bool) func(string, int, os.FileMode) (*os.File, error) {
	return func(name string, flag int, perm os.FileMode) (*os.File, error) {
		flag |= unix.O_NOFOLLOW | unix.O_CLOEXEC
		if create {
			flag |= os.O_CREATE | os.O_EXCL
		} else {
			flag &^= os.O_CREATE
		}
		f, err := os.OpenFile(name, flag, perm)
		if errors.Is(err, unix.ELOOP) {
			return nil, symlinkError(name)
		}
		if create && errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: something appeared at %s while signd was creating the store there (a link or another file); signd did not open it",
				ErrUnsafeFile, name)
		}
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil {
			err = checkInfo(name, fi)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
}

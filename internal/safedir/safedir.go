package safedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Error is a directory another local user can change.
type Error struct {
	Dir string
	// UID owns Dir when Others is false: neither root nor Euid.
	UID, Euid uint32
	// Others: Dir is writable by every local user and not sticky
	// (mode Mode).
	Others bool
	Mode   fs.FileMode
}

func (e *Error) Error() string {
	if e.Others {
		return fmt.Sprintf("directory %s is writable by every local user (mode %#o, not sticky)", e.Dir, e.Mode.Perm())
	}
	who, _ := Owner(e.UID)
	return fmt.Sprintf("directory %s is owned by %s, not by root or uid %d of this process", e.Dir, who, e.Euid)
}

// Check judges dir and every directory above it, both as written (each
// name Lstat'ed, so a link counts as its owner's) and with links resolved:
// each must be owned by root or the effective uid, and not writable by
// others unless sticky (/tmp). A dir that does not exist yet is judged by
// its nearest existing ancestor, where it would be created. The answer is
// nil, an *Error naming the first directory that fails, or the error of
// reading one.
func Check(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	euid := uint32(os.Geteuid())
	// As written.
	existing := ""
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && existing == "":
		case err != nil:
			return err
		default:
			if existing == "" {
				existing = p
			}
			if err := judge(p, fi, euid); err != nil {
				return err
			}
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	// Resolved.
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return err
	}
	for p := resolved; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if err := judge(p, fi, euid); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func judge(p string, fi fs.FileInfo, euid uint32) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != 0 && st.Uid != euid {
		return &Error{Dir: p, UID: st.Uid, Euid: euid}
	}
	if fi.Mode().Type() == fs.ModeSymlink {
		return nil // its target is judged by the resolved walk
	}
	if fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return &Error{Dir: p, Euid: euid, Others: true, Mode: fi.Mode()}
	}
	return nil
}

// Owner names uid for a message ("uid 999 (signd)") and says how to run
// a command as that user ("as that user (run: runuser -u signd -- signd
// ...)"), for the operator to whom a directory of signd's user was
// refused.
func Owner(uid uint32) (who, as string) {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return "uid " + id + " (" + u.Username + ")", "as that user (run: runuser -u " + u.Username + " -- signd ...)"
	}
	return "uid " + id, "as uid " + id
}

package safepath

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

// Policy says who may change the paths it checks and words its refusals:
//
//	<Key>: <what> <path> is owned by uid U, not by root or uid EUID that runs signd: that user <Harm> (run: chown EUID <path>)
//	<Key>: <what> <path> is writable by group or others (mode M): another local user <Harm> (run: chmod go-w <path>)
//
// Its refusals are *Error, for a caller that words them itself (DataDir's).
type Policy struct {
	// EUID is the effective uid signd runs as; root and EUID may own the
	// paths.
	EUID int
	// Key prefixes each error ("server.admin_socket: "); "" for none, when
	// the caller reports the message under a key of its own.
	Key string
	// Harm says what another owner or writer could do, after "that user"
	// ("could replace the socket and read the passwords and PINs sent to
	// it").
	Harm string
	// GroupWrite lets a path be writable by its group: the group is the
	// operator's choice (root:signd 0770). Only write by others is then
	// refused.
	GroupWrite bool
}

// Module is the Policy of pkcs11.module: a library dlopen(3) runs inside
// signd, and inside root's CLI when no daemon answers, whose constructors
// run before any PKCS#11 call.
func Module(euid int) Policy {
	return Policy{EUID: euid, Key: "pkcs11.module",
		Harm: "could change the code signd loads and runs (as root in root's signd commands)"}
}

// DataDir is the Policy of the directories signd creates and opens its
// data files in by name, store.path's and audit.checkpoint_dir: their
// callers word the refusal (*Error) themselves, and a group-writable
// directory passes (the group is the operator's choice). Another user
// who could change one could put a link in a file's place, and turn
// root's open or rename into one of a file of their choosing.
func DataDir(euid int) Policy {
	return Policy{EUID: euid, GroupWrite: true,
		Harm: "could put a link in the place of a file signd opens or renames there"}
}

// Error is a path that someone other than root and EUID can change: owned
// by UID, or (Writable) writable by group or others, mode Mode.
type Error struct {
	Key  string // the Policy's
	What string // "file", "directory", "parent directory", "symbolic link", ""
	Path string
	// UID owns Path when Writable is false: neither root nor EUID.
	UID  uint32
	EUID int
	// Writable: Path is writable by others, or by its group when the
	// Policy does not allow that, and not sticky where sticky would do.
	Writable bool
	Mode     fs.FileMode
	Harm     string // the Policy's
	Fix      string // the command that fixes it
}

func (e *Error) Error() string {
	subject := e.Path
	if e.What != "" {
		subject = e.What + " " + e.Path
	}
	var msg string
	if e.Writable {
		msg = fmt.Sprintf("%s is writable by group or others (mode %#o): another local user %s (run: %s)",
			subject, e.Mode.Perm(), e.Harm, e.Fix)
	} else {
		msg = fmt.Sprintf("%s is owned by uid %d, not by root or uid %d that runs signd: that user %s (run: %s)",
			subject, e.UID, e.EUID, e.Harm, e.Fix)
	}
	if e.Key != "" {
		msg = e.Key + ": " + msg
	}
	return msg
}

// Entry checks the path itself, whose FileInfo fi comes from Lstat, Stat or
// an open file's Stat: owned by root or EUID, not writable by group or
// others. what names it in the error ("file", "directory", "" for
// nothing); chmod is the command that fixes a writable path, "" for
// "chmod go-w PATH".
func (p Policy) Entry(what, path string, fi fs.FileInfo, chmod string) error {
	return p.check(what, path, fi, false, chmod)
}

// Parents checks dir and every directory above it, up to /, both as
// written (each name Lstat'ed, so a link counts as its owner's: whoever
// owns it can point it elsewhere) and with links resolved (so
// /var/run/signd is judged as /run/signd too): each owned by root or EUID
// and not writable by group or others unless sticky. A dir not made yet
// is judged by its nearest existing ancestor, where it would be made. The
// errors call them "parent directory".
func (p Policy) Parents(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return p.errorf("%w", err)
	}
	existing, err := p.written(abs)
	if err != nil {
		return err
	}
	return p.resolved(existing)
}

// File resolves the symbolic links of path and checks the file it names
// (Entry, as "file") and the way to it (Route). It returns the resolved
// path: open that one, not path, so that a link changed after the check
// does not matter.
func (p Policy) File(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", p.errorf("%w", err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", p.errorf("%w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", p.errorf("%w", err)
	}
	if err := p.Entry("file", real, fi, ""); err != nil {
		return "", err
	}
	if err := p.Route(path, real); err != nil {
		return "", err
	}
	return real, nil
}

// Route checks the way to path, whose links resolve to real
// (filepath.EvalSymlinks): path itself when it is a link (by its owner),
// every directory above it as written, as Parents does, then every
// directory above real. It does not judge the file itself (Entry does).
func (p Policy) Route(path, real string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return p.errorf("%w", err)
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode().Type() == fs.ModeSymlink {
		if err := p.name(abs, fi); err != nil {
			return err
		}
	}
	if _, err := p.written(filepath.Dir(abs)); err != nil {
		return err
	}
	if real, err = filepath.Abs(real); err != nil {
		return p.errorf("%w", err)
	}
	return p.resolved(filepath.Dir(real))
}

// written judges abs and each name above it as written, skipping names not
// made yet at the end of the path; it returns the first that exists.
func (p Policy) written(abs string) (string, error) {
	existing := ""
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist) && existing == "":
		case err != nil:
			return "", p.errorf("%w", err)
		default:
			if existing == "" {
				existing = d
			}
			if err := p.name(d, fi); err != nil {
				return "", err
			}
		}
		if d == filepath.Dir(d) {
			return existing, nil
		}
	}
}

// resolved judges dir, with its links resolved, and every directory above.
func (p Policy) resolved(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return p.errorf("%w", err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return p.errorf("%w", err)
	}
	for d := real; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return p.errorf("%w", err)
		}
		if err := p.name(d, fi); err != nil {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// name judges one name of a walk: a link by its owner only (its target is
// judged by the walk of the resolved path), anything else as a parent
// directory, which may be writable when sticky.
func (p Policy) name(path string, fi fs.FileInfo) error {
	if fi.Mode().Type() != fs.ModeSymlink {
		return p.check("parent directory", path, fi, true, "")
	}
	if err := p.owner("symbolic link", path, fi); err != nil {
		err.Fix = fmt.Sprintf("chown -h %d %s", p.EUID, path)
		return err
	}
	return nil
}

func (p Policy) check(what, path string, fi fs.FileInfo, sticky bool, chmod string) error {
	if err := p.owner(what, path, fi); err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	refused := fs.FileMode(0o022)
	if p.GroupWrite {
		refused = 0o002
	}
	if perm&refused == 0 || (sticky && fi.Mode()&fs.ModeSticky != 0) {
		return nil
	}
	if chmod == "" {
		chmod = "chmod go-w " + path
		if p.GroupWrite {
			chmod = "chmod o-w " + path
		}
	}
	return &Error{Key: p.Key, What: what, Path: path, EUID: p.EUID, Writable: true, Mode: fi.Mode(), Harm: p.Harm, Fix: chmod}
}

// owner refuses a path owned by neither root nor EUID.
func (p Policy) owner(what, path string, fi fs.FileInfo) *Error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 || int(st.Uid) == p.EUID {
		return nil
	}
	return &Error{Key: p.Key, What: what, Path: path, UID: st.Uid, EUID: p.EUID, Harm: p.Harm,
		Fix: fmt.Sprintf("chown %d %s", p.EUID, path)}
}

func (p Policy) errorf(format string, args ...any) error {
	if p.Key != "" {
		format = p.Key + ": " + format
	}
	return fmt.Errorf(format, args...)
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

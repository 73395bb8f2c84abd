package safepath

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Policy says who may change the paths it checks and words its refusals:
//
//	<Key>: <what> <path> is owned by uid U, not by root or uid EUID that runs signd: that user <Harm> (run: chown EUID <path>)
//	<Key>: <what> <path> is writable by group or others (mode M): another local user <Harm> (run: chmod go-w <path>)
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
}

// Module is the Policy of pkcs11.module: a library dlopen(3) runs inside
// signd, and inside root's CLI when no daemon answers, whose constructors
// run before any PKCS#11 call.
func Module(euid int) Policy {
	return Policy{EUID: euid, Key: "pkcs11.module",
		Harm: "could change the code signd loads and runs (as root in root's signd commands)"}
}

// Entry checks the path itself, whose FileInfo fi comes from Lstat, Stat or
// an open file's Stat: owned by root or EUID, not writable by group or
// others. what names it in the error ("file", "directory", "" for
// nothing); chmod is the command that fixes a writable path, "" for
// "chmod go-w PATH".
func (p Policy) Entry(what, path string, fi fs.FileInfo, chmod string) error {
	return p.check(what, path, fi, false, chmod)
}

// Parents checks dir and every directory above it, up to /, after
// resolving symbolic links (so /var/run/signd is judged as /run/signd):
// each owned by root or EUID and not writable by group or others unless
// sticky. The errors call them "parent directory".
func (p Policy) Parents(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return p.errorf("%w", err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return p.errorf("%w", err)
	}
	for d := real; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return p.errorf("%w", err)
		}
		if err := p.check("parent directory", d, fi, true, ""); err != nil {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// File resolves the symbolic links of path and checks the file it names
// (Entry, as "file") and the directories above it (Parents). It returns
// the resolved path: open that one, not path, so that a link changed after
// the check does not matter.
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
	if err := p.Parents(filepath.Dir(real)); err != nil {
		return "", err
	}
	return real, nil
}

func (p Policy) check(what, path string, fi fs.FileInfo, sticky bool, chmod string) error {
	subject := path
	if what != "" {
		subject = what + " " + path
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != p.EUID {
		return p.errorf("%s is owned by uid %d, not by root or uid %d that runs signd: that user %s (run: chown %d %s)",
			subject, st.Uid, p.EUID, p.Harm, p.EUID, path)
	}
	perm := fi.Mode().Perm()
	if perm&0o022 == 0 || (sticky && fi.Mode()&fs.ModeSticky != 0) {
		return nil
	}
	if chmod == "" {
		chmod = "chmod go-w " + path
	}
	return p.errorf("%s is writable by group or others (mode %#o): another local user %s (run: %s)",
		subject, perm, p.Harm, chmod)
}

func (p Policy) errorf(format string, args ...any) error {
	if p.Key != "" {
		format = p.Key + ": " + format
	}
	return fmt.Errorf(format, args...)
}

package adminrpc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/signd/signd/internal/safepath"
)

// The admin socket carries passwords, PINs and client secrets in clear.
// Three defences keep them between the CLI and the daemon:
//
//   - the daemon only listens in a directory that nobody but its owner
//     (root or the daemon's user) can write, so no other local user can
//     swap the socket for their own (CheckSocketDir);
//   - the daemon serves only peers whose SO_PEERCRED (unix(7)) credentials
//     it trusts: root, its own uid, members of server.admin_group and of
//     the groups of admin.roles (Access, Listener); what each may do is
//     the roles' business (Roles);
//   - the CLI sends nothing before it has checked who owns the socket file
//     and who listens on it (Trust, Dial).

// NoGroup is the AdminGID of Access and Trust when server.admin_group is
// not set.
const NoGroup = -1

// PeerCred returns the credentials the kernel recorded for the process at
// the other end of the Unix socket c (SO_PEERCRED): the connecting process
// for a server, the listening one for a client.
func PeerCred(c net.Conn) (*unix.Ucred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("admin socket: %T is not a Unix socket connection", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, fmt.Errorf("admin socket: SO_PEERCRED: %w", credErr)
	}
	return cred, nil
}

// Access decides which peers the daemon serves on its admin socket.
type Access struct {
	// UID is the daemon's effective uid. Root and UID are always served.
	UID uint32
	// AdminGID is the gid of server.admin_group, or NoGroup. A peer whose
	// gid is AdminGID, or whose user is a member of it in the group
	// database, is served too.
	AdminGID int
	// RoleGIDs are the groups of admin.roles (admin.RoleMap.Groups): their
	// members are served like the admin group's.
	RoleGIDs []uint32
	// GroupIDs returns the gids of the groups uid belongs to; nil means
	// UserGroupIDs (os/user).
	GroupIDs func(uid uint32) ([]uint32, error)
}

// Allows reports whether the peer with credentials c may use the socket.
func (a Access) Allows(c *unix.Ucred) bool {
	switch {
	case c == nil:
		return false
	case c.Uid == 0 || c.Uid == a.UID:
		return true
	}
	trusted := slices.Clone(a.RoleGIDs)
	if a.AdminGID >= 0 {
		trusted = append(trusted, uint32(a.AdminGID))
	}
	switch {
	case len(trusted) == 0:
		return false
	case slices.Contains(trusted, c.Gid):
		return true
	}
	groups := a.GroupIDs
	if groups == nil {
		groups = UserGroupIDs
	}
	gids, err := groups(c.Uid)
	return err == nil && slices.ContainsFunc(gids, func(g uint32) bool { return slices.Contains(trusted, g) })
}

// UserGroupIDs returns the primary and supplementary gids of the user with
// uid, from the system's user and group databases.
func UserGroupIDs(uid uint32) ([]uint32, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	out := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	return out, nil
}

// Listener is a Unix socket listener that hands out only connections from
// peers Access allows. Any other connection is closed before a byte is
// read, and logged with the peer's uid, gid and pid.
type Listener struct {
	net.Listener
	Access Access
	Logger *slog.Logger
}

// Accept waits for the next connection from an allowed peer.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cred, err := PeerCred(c)
		if err == nil && l.Access.Allows(cred) {
			return c, nil
		}
		if l.Logger != nil {
			if err != nil {
				l.Logger.Warn("admin socket: refused a connection without peer credentials", "err", err)
			} else {
				l.Logger.Warn("admin socket: refused a connection from an untrusted user",
					"peer_uid", cred.Uid, "peer_gid", cred.Gid, "peer_pid", cred.Pid)
			}
		}
		c.Close()
	}
}

// Trust says which daemon the CLI talks to: the socket file (by lstat) and
// the process listening on it (by SO_PEERCRED) must belong to root, to the
// CLI's own uid, or to the daemon's system user (DaemonUID) when that user
// owns the socket's directory and only it can write it: that is how the
// package sets the daemon's directory up (/run/signd, signd:signd 0750),
// and how a directory for group admins is set up (/run/signd-admin,
// signd:signd-admin 0750), so root and the admin group's members reach the
// packaged daemon. The daemon's uid is never taken from the directory
// itself: any member of a group can make a directory of that group, and a
// configuration file names the socket, so "whoever owns such a directory"
// could be anyone; DaemonUser comes from the user database, which only
// root changes.
type Trust struct {
	UID      uint32 // the CLI's effective uid
	AdminGID int    // gid of server.admin_group, or NoGroup
	// DaemonUID is the uid of the daemon's system user (DaemonUser), or
	// NoUser when there is none.
	DaemonUID int
}

// DaemonUser is the system user the daemon runs as (the Debian package's,
// made by its preinst; only root can make or change a user). The CLI
// trusts a socket of this user's (Trust).
const DaemonUser = "signd"

// NoUser is the DaemonUID of Trust when there is no DaemonUser.
const NoUser = -1

// TrustSelf is the Trust of the calling process; it looks DaemonUser up in
// the user database.
func TrustSelf(adminGID int) Trust {
	t := Trust{UID: uint32(os.Geteuid()), AdminGID: adminGID, DaemonUID: NoUser}
	if u, err := user.Lookup(DaemonUser); err == nil {
		if n, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			t.DaemonUID = int(n)
		}
	}
	return t
}

// uids returns the owners Trust accepts for socket.
func (t Trust) uids(socket string) []uint32 {
	uids := []uint32{0, t.UID}
	if t.DaemonUID < 0 {
		return uids
	}
	fi, err := os.Lstat(filepath.Dir(socket))
	if err != nil || !fi.IsDir() {
		return uids
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == uint32(t.DaemonUID) && fi.Mode().Perm()&0o022 == 0 {
		uids = append(uids, st.Uid)
	}
	return uids
}

// errNoDaemon means nothing listens on the socket: no file, or a stale one.
var errNoDaemon = errors.New("no daemon on the admin socket")

// dial connects to socket after checking its owner, then checks the peer.
// It returns errNoDaemon when nothing listens there.
func (t Trust) dial(ctx context.Context, socket string) (net.Conn, error) {
	fi, err := os.Lstat(socket)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoDaemon
	}
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", socket, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("admin socket %s is a %s, not a socket; refusing to use it (check server.admin_socket)", socket, fileKind(fi.Mode()))
	}
	trusted := t.uids(socket)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && !slices.Contains(trusted, st.Uid) {
		return nil, fmt.Errorf("admin socket %s is owned by uid %d, not by root or uid %d (you): it may be another user's trap for passwords and PINs, so nothing is sent; remove it, or run this command as uid %d if that is signd's user",
			socket, st.Uid, t.UID, st.Uid)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, errNoDaemon
		}
		return nil, fmt.Errorf("admin socket %s: %w", socket, err)
	}
	cred, err := PeerCred(c)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("admin socket %s: %w", socket, err)
	}
	if !slices.Contains(trusted, cred.Uid) {
		c.Close()
		return nil, fmt.Errorf("admin socket %s: the process listening on it (pid %d) runs as uid %d, not as root or uid %d (you): refusing to send it anything",
			socket, cred.Pid, cred.Uid, t.UID)
	}
	return c, nil
}

func fileKind(m fs.FileMode) string {
	switch m.Type() {
	case fs.ModeSymlink:
		return "symbolic link"
	case 0:
		return "regular file"
	case fs.ModeDir:
		return "directory"
	case fs.ModeNamedPipe:
		return "named pipe"
	}
	return "special file"
}

// CheckSocketDir refuses to put the admin socket into dir unless only
// root or the daemon (euid) can replace it there: dir must be a real
// directory (not a symbolic link) owned by root or euid, without write
// permission for group or others, and every directory above it must be
// owned by root or euid and not writable by group or others unless it is
// sticky (like /tmp). Errors name the directory and the command to run.
func CheckSocketDir(dir string, euid int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("server.admin_socket: %w", err)
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("server.admin_socket: directory %s: %w", abs, err)
	}
	if fi.Mode().Type() == fs.ModeSymlink {
		real, _ := filepath.EvalSymlinks(abs)
		return fmt.Errorf("server.admin_socket: directory %s is a symbolic link (to %s); whoever can change the link can move the socket: point server.admin_socket into the real directory", abs, real)
	}
	if !fi.IsDir() {
		return fmt.Errorf("server.admin_socket: %s is a %s, not a directory", abs, fileKind(fi.Mode()))
	}
	pol := socketPolicy(euid)
	if err := pol.Entry("directory", abs, fi, fmt.Sprintf("chmod 0700 %s, or 0750 with server.admin_group", abs)); err != nil {
		return err
	}
	return pol.Parents(filepath.Dir(abs))
}

// socketPolicy is who may change the admin socket's directory and those
// above it: root and euid, the daemon's user.
func socketPolicy(euid int) safepath.Policy {
	return safepath.Policy{EUID: euid, Key: "server.admin_socket",
		Harm: "could replace the socket and read the passwords and PINs sent to it"}
}

package adminrpc

import (
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/signd/signd/internal/safepath/safepathtest"
	"golang.org/x/sys/unix"
)

func TestAccessAllows(t *testing.T) {
	const daemon, admins, officers, auditors = 990, 4242, 4300, 4301
	groups := func(uid uint32) ([]uint32, error) {
		switch uid {
		case 1001: // alice: admins as a supplementary group
			return []uint32{1001, 27, admins}, nil
		case 1002: // bob: not an admin
			return []uint32{1002, 27}, nil
		case 1003: // carol: an auditor
			return []uint32{1003, auditors}, nil
		}
		return nil, errors.New("user: unknown userid")
	}
	roleGIDs := []uint32{officers, auditors}
	tests := []struct {
		name     string
		adminGID int
		roles    bool // admin.roles names officers and auditors
		peer     *unix.Ucred
		want     bool
	}{
		{"role group: process gid", NoGroup, true, &unix.Ucred{Uid: 1002, Gid: officers}, true},
		{"role group: member in the database", NoGroup, true, &unix.Ucred{Uid: 1003, Gid: 1003}, true},
		{"role group: not a member", NoGroup, true, &unix.Ucred{Uid: 1002, Gid: 1002}, false},
		{"role group: unknown user", NoGroup, true, &unix.Ucred{Uid: 5555, Gid: 5555}, false},
		{"role group and admin group", admins, true, &unix.Ucred{Uid: 1001, Gid: 1001}, true},
		{"role group beside an admin group", admins, true, &unix.Ucred{Uid: 1003, Gid: 1003}, true},
		{"role group: root still", NoGroup, true, &unix.Ucred{Uid: 0, Gid: 0}, true},
		{"no roles: a role group's member is not special", NoGroup, false, &unix.Ucred{Uid: 1003, Gid: auditors}, false},
		{"root", NoGroup, false, &unix.Ucred{Uid: 0, Gid: 0}, true},
		{"the daemon's user", NoGroup, false, &unix.Ucred{Uid: daemon, Gid: daemon}, true},
		{"another user", NoGroup, false, &unix.Ucred{Uid: 1001, Gid: 1001}, false},
		{"another user with the daemon's gid", NoGroup, false, &unix.Ucred{Uid: 1001, Gid: daemon}, false},
		{"gid 0 is not root", NoGroup, false, &unix.Ucred{Uid: 1001, Gid: 0}, false},
		{"no credentials", NoGroup, false, nil, false},
		{"admin group: process gid", admins, false, &unix.Ucred{Uid: 1002, Gid: admins}, true},
		{"admin group: member in the database", admins, false, &unix.Ucred{Uid: 1001, Gid: 1001}, true},
		{"admin group: not a member", admins, false, &unix.Ucred{Uid: 1002, Gid: 1002}, false},
		{"admin group: unknown user", admins, false, &unix.Ucred{Uid: 5555, Gid: 5555}, false},
		{"admin group: root still", admins, false, &unix.Ucred{Uid: 0, Gid: 0}, true},
		{"admin group: the daemon still", admins, false, &unix.Ucred{Uid: daemon, Gid: daemon}, true},
		{"no admin group: a member is not special", NoGroup, false, &unix.Ucred{Uid: 1001, Gid: admins}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Access{UID: daemon, AdminGID: tt.adminGID, GroupIDs: groups}
			if tt.roles {
				a.RoleGIDs = roleGIDs
			}
			if got := a.Allows(tt.peer); got != tt.want {
				t.Errorf("Allows(%+v) = %v, want %v", tt.peer, got, tt.want)
			}
		})
	}
}

// The CLI trusts the daemon's user (DaemonUID) only with an admin group,
// only when that user owns the socket's directory, the directory belongs
// to the admin group and only its owner can write it. Another member of
// the admin group can make such a directory too: its owner is not trusted.
func TestTrustUIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the directories")
	}
	const daemon, member, admins = 990, 65534, 4242
	tests := []struct {
		name      string
		adminGID  int
		daemonUID int
		owner     int
		gid       int
		mode      os.FileMode
		want      bool // the directory owner's uid trusted
	}{
		{"admin group directory 0750", admins, daemon, daemon, admins, 0o750, true},
		{"admin group directory 0710", admins, daemon, daemon, admins, 0o710, true},
		// The packaged layout without group admins: /run/signd,
		// signd:signd 0750; root's CLI reaches the daemon.
		{"no admin group configured", NoGroup, daemon, daemon, daemon, 0o750, true},
		{"the daemon's directory of another group", admins, daemon, daemon, 100, 0o750, true},
		{"no admin group, group-writable", NoGroup, daemon, daemon, daemon, 0o770, false},
		{"no admin group, another user's directory", NoGroup, daemon, member, member, 0o700, false},
		{"group-writable directory", admins, daemon, daemon, admins, 0o770, false},
		{"world-writable directory", admins, daemon, daemon, admins, 0o757, false},
		{"admin group directory of another member", admins, daemon, member, admins, 0o750, false},
		{"no daemon user", admins, NoUser, daemon, admins, 0o750, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, tt.owner, tt.gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			uids := Trust{UID: 1001, AdminGID: tt.adminGID, DaemonUID: tt.daemonUID}.uids(filepath.Join(dir, "s.sock"))
			got := slices.Contains(uids, uint32(tt.owner))
			if got != tt.want || uids[0] != 0 || uids[1] != 1001 {
				t.Errorf("trusted uids %v; owner %d trusted: %v, want %v", uids, tt.owner, got, tt.want)
			}
		})
	}
}

// TrustSelf takes the daemon's uid from the user database (DaemonUser),
// never from a directory, with or without an admin group.
func TestTrustSelfDaemonUID(t *testing.T) {
	want := NoUser
	if u, err := user.Lookup(DaemonUser); err == nil {
		want, _ = strconv.Atoi(u.Uid)
	}
	for _, gid := range []int{NoGroup, 4242} {
		if got := TrustSelf(gid).DaemonUID; got != want {
			t.Errorf("TrustSelf(%d).DaemonUID = %d, want %d (the %s user)", gid, got, want, DaemonUser)
		}
	}
}

// Dial refuses what is not a socket instead of treating it as stale (the
// daemon would delete it to make room).
func TestDialRefusesNonSocket(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "signd.db")
	if err := os.WriteFile(file, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"signd.db": "is a regular file, not a socket", "link": "is a symbolic link, not a socket"} {
		r, err := Dial(filepath.Join(dir, name), TrustSelf(NoGroup))
		if r != nil || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Dial(%s) = %v, %v; want %q", name, r, err, want)
		}
	}
	if data, _ := os.ReadFile(file); string(data) != "data" {
		t.Errorf("file changed: %q", data)
	}
}

func TestDialNoDaemon(t *testing.T) {
	dir := t.TempDir()
	// No file.
	if r, err := Dial(filepath.Join(dir, "none.sock"), TrustSelf(NoGroup)); r != nil || err != nil {
		t.Errorf("Dial of a missing socket = %v, %v; want nil, nil", r, err)
	}
	// A stale socket: bound, then its listener closed without unlinking.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if r, err := Dial(stale, TrustSelf(NoGroup)); r != nil || err != nil {
		t.Errorf("Dial of a stale socket = %v, %v; want nil, nil", r, err)
	}
}

// PeerCred reports this process at both ends of a connection to itself.
func TestPeerCred(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	defer s.Close()
	for _, conn := range []net.Conn{c, s} {
		cred, err := PeerCred(conn)
		if err != nil {
			t.Fatal(err)
		}
		if int(cred.Uid) != os.Geteuid() || int(cred.Gid) != os.Getegid() || int(cred.Pid) != os.Getpid() {
			t.Errorf("PeerCred = %+v, want uid %d gid %d pid %d", cred, os.Geteuid(), os.Getegid(), os.Getpid())
		}
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	tc, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := PeerCred(tc); err == nil {
		t.Error("PeerCred of a TCP connection succeeded")
	}
}

func TestCheckSocketDir(t *testing.T) {
	euid := os.Geteuid()
	tests := []struct {
		name  string
		setup func(t *testing.T, base string) string
		want  string // "" = accepted
	}{
		{"0700", func(t *testing.T, b string) string { return safepathtest.Mkdir(t, b+"/d", 0o700) }, ""},
		{"0750", func(t *testing.T, b string) string { return safepathtest.Mkdir(t, b+"/d", 0o750) }, ""},
		{"0755", func(t *testing.T, b string) string { return safepathtest.Mkdir(t, b+"/d", 0o755) }, ""},
		{"0770", func(t *testing.T, b string) string { return safepathtest.Mkdir(t, b+"/d", 0o770) }, "is writable by group or others (mode 0770)"},
		{"0702", func(t *testing.T, b string) string { return safepathtest.Mkdir(t, b+"/d", 0o702) }, "is writable by group or others (mode 0702)"},
		{"sticky 1777 itself", func(t *testing.T, b string) string { return safepathtest.Mkdir(t, b+"/d", 0o777|os.ModeSticky) }, "is writable by group or others (mode 0777)"},
		{"symbolic link", func(t *testing.T, b string) string {
			safepathtest.Mkdir(t, b+"/real", 0o700)
			if err := os.Symlink(b+"/real", b+"/d"); err != nil {
				t.Fatal(err)
			}
			return b + "/d"
		}, "is a symbolic link (to "},
		{"a file", func(t *testing.T, b string) string {
			if err := os.WriteFile(b+"/d", nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return b + "/d"
		}, "is a regular file, not a directory"},
		{"missing", func(t *testing.T, b string) string { return b + "/d" }, "no such file or directory"},
		{"writable parent", func(t *testing.T, b string) string {
			safepathtest.Mkdir(t, b+"/p", 0o777)
			return safepathtest.Mkdir(t, b+"/p/d", 0o700)
		}, "parent directory "},
		{"sticky parent", func(t *testing.T, b string) string {
			safepathtest.Mkdir(t, b+"/p", 0o777|os.ModeSticky)
			return safepathtest.Mkdir(t, b+"/p/d", 0o700)
		}, ""},
		{"parent reached through a symbolic link", func(t *testing.T, b string) string {
			safepathtest.Mkdir(t, b+"/p", 0o755)
			safepathtest.Mkdir(t, b+"/p/d", 0o700)
			if err := os.Symlink(b+"/p", b+"/alias"); err != nil {
				t.Fatal(err)
			}
			return b + "/alias/d" // like /var/run/signd with /var/run -> /run
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			dir := tt.setup(t, base)
			err := CheckSocketDir(dir, euid)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckSocketDir(%s): %v", dir, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckSocketDir(%s) = %v, want %q", dir, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "server.admin_socket: ") {
				t.Errorf("error %q does not name the key", err)
			}
		})
	}
}

func TestCheckSocketDirOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	base := t.TempDir()
	dir := safepathtest.Mkdir(t, base+"/d", 0o700)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := CheckSocketDir(dir, 0)
	if err == nil || !strings.Contains(err.Error(), "directory "+dir+" is owned by uid 65534, not by root or uid 0") ||
		!strings.Contains(err.Error(), "run: chown 0 "+dir) {
		t.Fatalf("CheckSocketDir = %v", err)
	}
	// A daemon running as 65534 accepts its own directory.
	if err := CheckSocketDir(dir, 65534); err != nil {
		t.Fatalf("CheckSocketDir as the owner: %v", err)
	}
	// A parent owned by someone else can rename the directory away.
	if err := os.Chown(base, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := CheckSocketDir(dir, 0); err == nil || !strings.Contains(err.Error(), "parent directory "+base+" is owned by uid 65534") {
		t.Fatalf("CheckSocketDir under a foreign parent = %v", err)
	}
}

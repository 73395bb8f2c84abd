package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/signd/signd/cmd/signd/adminrpc"
)

// Attacks on the admin socket, which carries passwords and PINs in clear:
// a local user who swaps the socket, connects to it, or listens in the
// daemon's place. The tests that need a second uid run as root (CI does)
// and start a copy of this test binary as nobody (65534); TestMain turns
// it into a helper process (runChild).

const (
	childEnv       = "SIGND_TEST_CHILD" // "connect" or "listen"
	childSocketEnv = "SIGND_TEST_CHILD_SOCKET"
	nobody         = 65534
	stranger       = 54321 // a uid and gid no database knows
)

// runChild is the helper process: "connect" asks the admin API for the
// user list as any local user could and prints "status N", "hung up: ..."
// (connected, then cut off) or "dial error: ..." (not connected);
// "listen" plays a fake daemon that prints every request it receives
// until its stdin closes.
func runChild(mode string) int {
	socket := os.Getenv(childSocketEnv)
	switch mode {
	case "connect":
		conn, err := net.DialTimeout("unix", socket, 10*time.Second)
		if err != nil {
			fmt.Println("dial error:", err)
			return 0
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		req, _ := http.NewRequest(http.MethodPost, "http://signd/admin/v1/ListUsers", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		if err := req.Write(conn); err != nil {
			fmt.Println("hung up:", err)
			return 0
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			fmt.Println("hung up:", err)
			return 0
		}
		res.Body.Close()
		fmt.Println("status", res.StatusCode)
		return 0
	case "call":
		return callChild(socket)
	case "listen":
		ln, err := net.Listen("unix", socket)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		_ = os.Chmod(socket, 0o777)
		var mu sync.Mutex
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			fmt.Printf("got %s %s\n", r.URL.Path, body)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{}"))
		}))
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown %s %q\n", childEnv, mode)
	return 2
}

// childBin is a copy of the test binary that other uids can execute (the
// go build directory is private to root).
var childBin struct {
	sync.Mutex
	dir, path string
}

func childBinary(t *testing.T) string {
	t.Helper()
	childBin.Lock()
	defer childBin.Unlock()
	if childBin.path != "" {
		return childBin.path
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sd-child-")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "signd.test")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	chmod(t, dir, 0o755)
	chmod(t, path, 0o755)
	childBin.dir, childBin.path = dir, path
	return path
}

func removeChildBinary() {
	if childBin.dir != "" {
		os.RemoveAll(childBin.dir)
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a helper process as another uid (CI runs the tests as root)")
	}
}

// childCommand prepares the helper process in mode as uid/gid with the
// supplementary groups.
func childCommand(t *testing.T, uid, gid uint32, groups []uint32, mode, socket string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(childBinary(t))
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childSocketEnv+"="+socket)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
	return cmd
}

// connectAs calls the admin API on socket as uid/gid and returns what the
// helper printed.
func connectAs(t *testing.T, socket string, uid, gid uint32, groups ...uint32) string {
	t.Helper()
	out, err := childCommand(t, uid, gid, groups, "connect", socket).CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, path string, uid, gid int) {
	t.Helper()
	if err := os.Lchown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode) // past the umask
}

// serveOnce runs `signd serve` and returns its error. A daemon that gets
// as far as serving is stopped at once and reported: these are the cases
// where it must not start.
func serveOnce(t *testing.T, e *env) (started bool, err error) {
	t.Helper()
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	a.argon2 = &testArgon2
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.ready = func(string, string) { started = true; cancel() }
	cmd := a.root()
	cmd.SetArgs([]string{"--config", e.cfgPath, "serve"})
	err = cmd.ExecuteContext(ctx)
	return started, err
}

// The daemon refuses to put its socket where another user could replace
// it: a directory writable by group or others, a symbolic link, a
// directory of another user, or below a parent any user can rename
// things in.
func TestServeRefusesUnsafeSocketDir(t *testing.T) {
	tests := []struct {
		name  string
		root  bool                                   // needs root (chown)
		setup func(t *testing.T, base string) string // returns the socket path
		want  func(base string) []string             // nil = serve starts
	}{
		{"world writable", false,
			func(t *testing.T, base string) string { mkdir(t, base+"/d", 0o777); return base + "/d/s.sock" },
			func(base string) []string {
				return []string{"directory " + base + "/d is writable by group or others (mode 0777)", "run: chmod 0700 " + base + "/d"}
			}},
		{"group writable", false,
			func(t *testing.T, base string) string { mkdir(t, base+"/d", 0o770); return base + "/d/s.sock" },
			func(base string) []string {
				return []string{"directory " + base + "/d is writable by group or others (mode 0770)"}
			}},
		{"symbolic link", false,
			func(t *testing.T, base string) string {
				mkdir(t, base+"/real", 0o700)
				if err := os.Symlink(base+"/real", base+"/link"); err != nil {
					t.Fatal(err)
				}
				return base + "/link/s.sock"
			},
			func(base string) []string { return []string{"directory " + base + "/link is a symbolic link"} }},
		{"other user's directory", true,
			func(t *testing.T, base string) string {
				mkdir(t, base+"/d", 0o700)
				chown(t, base+"/d", nobody, nobody)
				return base + "/d/s.sock"
			},
			func(base string) []string {
				return []string{"directory " + base + "/d is owned by uid 65534", "run: chown 0 " + base + "/d"}
			}},
		{"world writable parent", false,
			func(t *testing.T, base string) string {
				mkdir(t, base+"/p", 0o777)
				mkdir(t, base+"/p/d", 0o700)
				return base + "/p/d/s.sock"
			},
			func(base string) []string {
				return []string{"parent directory " + base + "/p is writable by group or others"}
			}},
		{"sticky world writable parent", false,
			func(t *testing.T, base string) string {
				mkdir(t, base+"/p", 0o777|os.ModeSticky)
				mkdir(t, base+"/p/d", 0o700)
				return base + "/p/d/s.sock"
			}, nil},
		{"0750 directory", false,
			func(t *testing.T, base string) string { mkdir(t, base+"/d", 0o750); return base + "/d/s.sock" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			e := newEnv(t, "")
			socket := tt.setup(t, e.dir)
			t.Setenv("SIGND_SERVER_ADMIN_SOCKET", socket)
			started, err := serveOnce(t, e)
			if tt.want == nil {
				if !started {
					t.Fatalf("serve did not start: %v", err)
				}
				return
			}
			if started || err == nil {
				t.Fatalf("serve started with its socket at %s", socket)
			}
			for _, frag := range tt.want(e.dir) {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q\nlacks %q", err, frag)
				}
			}
			if _, err := os.Lstat(socket); err == nil {
				t.Errorf("socket %s was created", socket)
			}
		})
	}
}

// A connection from a user who is neither root, signd's user nor in
// server.admin_group is closed unanswered, even when the socket file's
// mode would let it through (a careless chmod, an ACL, the moment between
// bind and chmod), and logged with the peer's uid and pid.
func TestAdminSocketRefusesForeignUser(t *testing.T) {
	needRoot(t)
	e := newEnv(t, "")
	_, logs := e.daemon()
	socket := filepath.Join(e.dir, "s.sock")
	chmod(t, e.dir, 0o711)
	chmod(t, socket, 0o666)

	got := connectAs(t, socket, nobody, nobody)
	if strings.HasPrefix(got, "status") {
		t.Fatalf("uid 65534 reached the admin API: %s", got)
	}
	mustBeDaemonRefusal(t, got)
	log := logs.String()
	if !strings.Contains(log, "refused a connection") || !strings.Contains(log, `"peer_uid":65534`) || !strings.Contains(log, `"peer_pid":`) {
		t.Errorf("refusal not logged with the peer's uid and pid:\n%s", log)
	}
	// Root is still served through the same listener.
	if out := e.must("", "user", "list", "--json"); !strings.Contains(out, "[") {
		t.Errorf("root's user list over the socket: %q", out)
	}
}

// mustBeDaemonRefusal checks that the helper got through to the daemon
// and was hung up on, rather than stopped by the file mode: the test is
// about the daemon's check, not the kernel's.
func mustBeDaemonRefusal(t *testing.T, got string) {
	t.Helper()
	if !strings.HasPrefix(got, "hung up:") {
		t.Errorf("helper output %q: want the daemon to accept the connection and hang up", got)
	}
}

// Members of server.admin_group are served: by the process's gid, and by
// the user's membership in the group database. Others are not.
func TestAdminSocketAdminGroup(t *testing.T) {
	needRoot(t)
	grp, err := user.LookupGroupId("65534")
	if err != nil {
		t.Skipf("no group 65534 on this system: %v", err)
	}
	t.Setenv("SIGND_SERVER_ADMIN_GROUP", grp.Name)
	e := newEnv(t, "")
	e.daemon()
	socket := filepath.Join(e.dir, "s.sock")
	fi, err := os.Stat(socket)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || st.Gid != nobody {
		t.Errorf("socket mode %#o group %d, want 0660 group 65534", fi.Mode().Perm(), st.Gid)
	}
	// The directory as docs/CONFIG.md ("Securing the admin socket") sets it up: signd's, the admin group's, 0750.
	chown(t, e.dir, 0, nobody)
	chmod(t, e.dir, 0o750)

	t.Run("gid of the process", func(t *testing.T) {
		if got := connectAs(t, socket, nobody, nobody); got != "status 200" {
			t.Errorf("admin group member: %s, want status 200", got)
		}
	})
	t.Run("member in the group database", func(t *testing.T) {
		gids, err := adminrpc.UserGroupIDs(nobody)
		if err != nil || !slices.Contains(gids, nobody) {
			t.Skipf("uid 65534 is not in group 65534 in the database (%v, %v)", gids, err)
		}
		// SO_PEERCRED reports gid 54321; the kernel lets the connection
		// through on the supplementary group.
		if got := connectAs(t, socket, nobody, stranger, nobody); got != "status 200" {
			t.Errorf("admin group member by database: %s, want status 200", got)
		}
	})
	t.Run("not a member", func(t *testing.T) {
		chmod(t, socket, 0o666)
		chmod(t, e.dir, 0o755)
		got := connectAs(t, socket, stranger, stranger)
		if strings.HasPrefix(got, "status") {
			t.Fatalf("uid %d outside the admin group reached the admin API: %s", stranger, got)
		}
		mustBeDaemonRefusal(t, got)
	})
}

// fakeDaemon listens on socket in this process (root) and records every
// request body it receives.
func fakeDaemon(t *testing.T, socket string) func() []string {
	t.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}
}

const sentinelPassword = "sentinel-password-7f3a9c"

// A socket file owned by another user is someone else's: the CLI sends
// it nothing.
func TestCLIRefusesForeignSocketOwner(t *testing.T) {
	needRoot(t)
	e := newEnv(t, "")
	socket := filepath.Join(e.dir, "s.sock")
	received := fakeDaemon(t, socket)
	chown(t, socket, nobody, nobody)

	_, _, err := e.run(sentinelPassword+"\n", "user", "set-password", "alice", "--password-file", "-")
	if err == nil || !strings.Contains(err.Error(), "admin socket "+socket+" is owned by uid 65534, not by root or uid 0") {
		t.Errorf("CLI error %v, want a refusal naming the socket's owner", err)
	}
	if got := received(); len(got) != 0 {
		t.Errorf("the CLI sent %q to a socket owned by uid 65534", got)
	}
}

// A process of another user listening on a socket that looks like root's
// (it chowned nothing: root's backup tool, a race, a bind mount) is not
// the daemon: SO_PEERCRED tells, and the CLI sends it nothing.
func TestCLIRefusesForeignPeer(t *testing.T) {
	needRoot(t)
	e := newEnv(t, "")
	dir := filepath.Join(e.dir, "n")
	mkdir(t, dir, 0o700)
	chown(t, dir, nobody, nobody)
	chmod(t, e.dir, 0o711)
	socket := filepath.Join(dir, "s.sock")
	t.Setenv("SIGND_SERVER_ADMIN_SOCKET", socket)

	cmd := childCommand(t, nobody, nobody, nil, "listen", socket)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		stdin.Close()
		_ = cmd.Wait()
		t.Fatalf("helper: %q, %v", line, err)
	}
	chown(t, socket, 0, 0)

	_, _, cliErr := e.run(sentinelPassword+"\n", "user", "set-password", "alice", "--password-file", "-")
	stdin.Close()
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Errorf("helper: %v", err)
	}
	if strings.Contains(string(rest), sentinelPassword) {
		t.Errorf("the CLI sent the password to a process of uid 65534: %s", rest)
	}
	if cliErr == nil || !strings.Contains(cliErr.Error(), "runs as uid 65534, not as root or uid 0") {
		t.Errorf("CLI error %v, want a refusal naming the listener's uid", cliErr)
	}
}

// An existing store file that other users can read is refused by the
// commands that open it and by the daemon, with the chmod that fixes it.
func TestStoreFileModeRefused(t *testing.T) {
	e := newEnv(t, "")
	e.must("", "user", "list") // creates the store, 0600
	path := filepath.Join(e.dir, "signd.db")
	chmod(t, path, 0o644)
	hint := "chmod 600 " + path

	if _, _, err := e.run("", "user", "list"); err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("user list on a 0644 store: %v, want the hint %q", err, hint)
	}
	if _, _, err := e.run("", "audit", "verify"); err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("audit verify on a 0644 store: %v, want the hint %q", err, hint)
	}
	if started, err := serveOnce(t, e); started || err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("serve on a 0644 store: started %v, %v; want the hint %q", started, err, hint)
	}
	chmod(t, path, 0o600)
	e.must("", "user", "list")
}

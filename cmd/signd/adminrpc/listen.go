package adminrpc

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
)

// PrepareDir creates the admin socket's directory (0700) if it is
// missing and refuses one that someone other than root or this process's
// user could write (CheckSocketDir).
func PrepareDir(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("server.admin_socket: %w", err)
	}
	return CheckSocketDir(dir, os.Geteuid())
}

// Listen listens on the admin Unix socket: mode 0600, or 0660 with
// group adminGID when server.admin_group is set. Connections are served
// only to root, this process's user, adminGID's members and the members
// of the role groups roleGIDs (SO_PEERCRED, Listener). A socket
// file nobody answers on is stale and replaced; one that answers means
// another daemon runs.
func Listen(path string, adminGID int, roleGIDs []uint32, logger *slog.Logger) (net.Listener, error) {
	if r, err := Dial(path, TrustSelf(adminGID)); err != nil {
		return nil, err
	} else if r != nil {
		return nil, fmt.Errorf("server.admin_socket %s: another signd answers there", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("server.admin_socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("server.admin_socket %s: %w", path, err)
	}
	mode := os.FileMode(0o600)
	if adminGID != NoGroup {
		mode = 0o660
		if err := os.Chown(path, -1, adminGID); err != nil {
			ln.Close()
			return nil, fmt.Errorf("server.admin_socket %s: giving it to server.admin_group: %w", path, err)
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("server.admin_socket %s: %w", path, err)
	}
	access := Access{UID: uint32(os.Geteuid()), AdminGID: adminGID, RoleGIDs: roleGIDs}
	return &Listener{Listener: ln, Access: access, Logger: logger}, nil
}

package adminrpc

import (
	"context"
	"net/http"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/signd/signd/admin"
	softhsmtest "github.com/signd/signd/softhsm-test"
)

// token is the SoftHSM2 token of the tests that act on keys
// (acts_test.go).
var token *softhsmtest.Token

func TestMain(m *testing.M) {
	os.Exit(softhsmtest.Main(m, "signd-adminrpc-test", func(tok *softhsmtest.Token) (func(), error) {
		token = tok
		return nil, nil
	}))
}

// everyRole is the Handler's Principal in tests of the transport: every
// peer holds every role.
func everyRole(cred *unix.Ucred) admin.Principal {
	return admin.SocketPrincipal(cred.Uid, "", admin.Roles())
}

// withPeer gives a request made without a socket the credentials
// ConnContext would have recorded for this process.
func withPeer(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), peerKey{}, self()))
}

// self returns this process's credentials as SO_PEERCRED reports them.
func self() *unix.Ucred {
	return &unix.Ucred{Pid: int32(unix.Getpid()), Uid: uint32(unix.Getuid()), Gid: uint32(unix.Getgid())}
}

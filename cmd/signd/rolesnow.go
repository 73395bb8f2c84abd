package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/cmd/signd/adminrpc"
)

// rolesNow is admin.Config.RolesNow: the roles the requester of a pending
// request holds when it is approved, looked up as the transport they
// asked through would look them up now. A socket peer ("uid:1001") by
// the groups of its uid (socket.RolesOf); a client certificate by the
// chain kept with the request, if the provisioning API (api) admits it
// now (api.RolesOf). api is nil where the API is not served (the CLI
// on the store file, a daemon without admin.api_listen): a certificate's
// request is then refused, since nothing can say it is still admitted.
func rolesNow(socket adminrpc.Roles, api *adminapi.Gate) admin.RolesNow {
	return func(_ context.Context, party string, certs [][]byte) ([]admin.Role, error) {
		if uid, ok := strings.CutPrefix(party, "uid:"); ok && len(certs) == 0 {
			n, err := strconv.ParseUint(uid, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("the requester %q is not a uid", party)
			}
			return socket.RolesOf(uint32(n))
		}
		switch {
		case len(certs) == 0:
			return nil, fmt.Errorf("the request of %s keeps no client certificate (asked before this version of signd): ask again", party)
		case api == nil:
			return nil, errors.New("the provisioning API is not served here, so no client certificate is admitted: approve it on a daemon that serves it")
		}
		return api.RolesOf(certs)
	}
}

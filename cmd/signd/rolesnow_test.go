package main

import (
	"context"
	"crypto/x509"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// rolesNow asks the transport a requester asked through: a socket peer
// by their uid's groups now, a certificate by the provisioning API's
// gate now; a certificate's request where no API is served, or one that
// kept no certificate, cannot be approved.
func TestRolesNow(t *testing.T) {
	groups, err := admin.GroupRoleMap(map[string][]uint32{"security_officer": {54300}})
	if err != nil {
		t.Fatal(err)
	}
	socket := adminrpc.Roles{Map: groups, GroupIDs: func(uid uint32) ([]uint32, error) {
		if uid == 54311 {
			return []uint32{54300}, nil
		}
		return nil, errors.New("nss: connection refused")
	}}
	ca := certstatustest.New(t, "admin API CA", nil)
	one := ca.ClientCert(t, "one", time.Time{}, time.Time{})
	certs, err := admin.CertRoleMap(map[string][]string{"administrator": {"CN=one,O=Example"}})
	if err != nil {
		t.Fatal(err)
	}
	gate := &adminapi.Gate{ClientCAs: []*x509.Certificate{ca.Cert}, Roles: certs}
	tests := []struct {
		name  string
		api   *adminapi.Gate
		party string
		certs [][]byte
		want  []admin.Role
		err   string
	}{
		{"socket peer", gate, "uid:54311", nil, []admin.Role{admin.RoleSecurityOfficer}, ""},
		{"socket peer, database down", gate, "uid:54312", nil, nil, "the groups of uid 54312 cannot be looked up: nss: connection refused"},
		{"not a uid", gate, "uid:x", nil, nil, `the requester "uid:x" is not a uid`},
		{"certificate", gate, admin.CertParty(one.Leaf), one.Certificate, []admin.Role{admin.RoleAdministrator}, ""},
		{"certificate, no API served", nil, admin.CertParty(one.Leaf), one.Certificate, nil,
			"the provisioning API is not served here, so no client certificate is admitted: approve it on a daemon that serves it"},
		{"certificate not kept", gate, "cert-sha256:00", nil, nil,
			"the request of cert-sha256:00 keeps no client certificate (asked before this version of signd): ask again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rolesNow(socket, tt.api)(context.Background(), tt.party, tt.certs)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err) {
				t.Fatalf("rolesNow(%q) = %v, want error %q", tt.party, err, tt.err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rolesNow(%q) = %v, want %v", tt.party, got, tt.want)
			}
		})
	}
}

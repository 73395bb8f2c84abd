package csc_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/csc/certstatus"
)

// fakeRevocation answers Status from a settable value (the real checker,
// with OCSP and CRLs, is certstatus's and cmd/signd's subject).
type fakeRevocation struct {
	mu      sync.Mutex
	status  certstatus.Status
	current bool
}

func (f *fakeRevocation) set(s certstatus.Status, current bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.current = s, current
}

func (f *fakeRevocation) Status([][]byte) (certstatus.Status, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, f.current
}

func withRevocation(r csc.Revocation) envOption { return func(h *csc.Handler) { h.Revocation = r } }

// A revoked, suspended or unknown-status certificate disables the key:
// credentials/info says so, signHash refuses with the exact description
// and leaves the SAD alone, and once the status is valid again the same
// SAD signs.
func TestRevocationDisablesKey(t *testing.T) {
	const name = "O=Example Org,CN=alice signer"
	tests := []struct {
		status             certstatus.Status
		current            bool
		wantCert, wantDesc string
	}{
		{certstatus.Revoked, true, "revoked", "Signing certificate '" + name + "' is revoked."},
		{certstatus.Suspended, true, "suspended", "Signing certificate '" + name + "' is suspended."},
		{certstatus.Revoked, false, "revoked", "Signing certificate '" + name + "' is revoked."},
		{certstatus.Valid, false, "valid", "The revocation status of signing certificate '" + name + "' could not be verified."},
	}
	for _, tt := range tests {
		t.Run(tt.wantCert+"/"+map[bool]string{true: "current", false: "stale"}[tt.current], func(t *testing.T) {
			rev := &fakeRevocation{}
			e := newEnv(t, withRevocation(rev))
			bearer, cred := e.alice()
			d := digest("revocation")
			sad := e.sad("alice", "rp1", cred, time.Minute, d)

			rev.set(tt.status, tt.current)
			info := e.call("credentials/info", bearer, `{"credentialID":"`+cred+`"}`)
			key, _ := info.body["key"].(map[string]any)
			cert, _ := info.body["cert"].(map[string]any)
			if info.status != http.StatusOK || key["status"] != "disabled" || cert["status"] != tt.wantCert {
				t.Fatalf("credentials/info: %d key %v cert %v; want disabled, %s", info.status, key["status"], cert["status"], tt.wantCert)
			}
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			wantError(t, r, http.StatusBadRequest, "invalid_request", tt.wantDesc)

			rev.set(certstatus.Valid, true)
			info = e.call("credentials/info", bearer, `{"credentialID":"`+cred+`"}`)
			key, _ = info.body["key"].(map[string]any)
			cert, _ = info.body["cert"].(map[string]any)
			if key["status"] != "enabled" || cert["status"] != "valid" {
				t.Fatalf("valid again: key %v cert %v", key["status"], cert["status"])
			}
			sigs := signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)))
			e.verify(cred, d, sigs[0])
		})
	}
}

package config

import "testing"

// TestCheckpointOrigin: the origin derived from server.base_url is a
// C2SP signed-note key name; a configured one wins.
func TestCheckpointOrigin(t *testing.T) {
	for _, tt := range []struct{ base, set, want string }{
		{"https://sign.example.org", "", "sign.example.org/audit"},
		{"https://sign.example.org:8443/signd", "", "sign.example.org:8443/signd/audit"},
		{"http://[::1]:8443", "", "[::1]:8443/audit"},
		{"", "", "signd/audit"},
		{"https://sign.example.org", "log.example/audit", "log.example/audit"},
	} {
		got := AuditConfig{CheckpointOrigin: tt.set}.Origin(tt.base)
		if got != tt.want || checkpointOrigin(got) != "" {
			t.Errorf("Origin(%q) with %q = %q (%s), want %q", tt.base, tt.set, got, checkpointOrigin(got), tt.want)
		}
	}
}

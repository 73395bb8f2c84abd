package passwords_test

import (
	"context"
	"strings"
	"testing"

	"github.com/signd/signd/oauth/passwords"
)

// TestAuditIP: an audit entry records a remote address in its canonical
// form and never the text of a header that is no address.
func TestAuditIP(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"192.0.2.1", "192.0.2.1"},
		{"2001:DB8:0:0::1", "2001:db8::1"},
		{"::ffff:192.0.2.1", "::ffff:192.0.2.1"},
		{"fe80::1%eth0", "fe80::1"},
		{"fe80::1%\n{\"kind\":\"x\"}", "fe80::1"},
		{"192.0.2.1:443", "invalid"},
		{"[2001:db8::1]", "invalid"},
		{"evil\n{\"kind\":\"login\"}", "invalid"},
		{"\xff\xfe", "invalid"},
		{strings.Repeat("1", 5000), "invalid"},
	} {
		if got := passwords.AuditIP(tc.in); got != tc.want {
			t.Errorf("AuditIP(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestWithOrigin: an inner layer adds what it knows (the client, the door)
// to what an outer layer set (the remote address), and its own non-empty
// values win; the address is kept canonical.
func TestWithOrigin(t *testing.T) {
	ctx := context.Background()
	if got := passwords.OriginFrom(ctx); got != (passwords.Origin{}) {
		t.Errorf("OriginFrom(no origin) = %+v", got)
	}
	ctx = passwords.WithOrigin(ctx, passwords.Origin{IP: "2001:DB8::7"})
	ctx = passwords.WithOrigin(ctx, passwords.Origin{Client: "rp", Door: passwords.DoorAuthLogin})
	want := passwords.Origin{Client: "rp", IP: "2001:db8::7", Door: passwords.DoorAuthLogin}
	if got := passwords.OriginFrom(ctx); got != want {
		t.Errorf("OriginFrom = %+v, want %+v", got, want)
	}
	ctx = passwords.WithOrigin(ctx, passwords.Origin{IP: "not an address", Door: passwords.DoorLoginPage})
	want = passwords.Origin{Client: "rp", IP: "invalid", Door: passwords.DoorLoginPage}
	if got := passwords.OriginFrom(ctx); got != want {
		t.Errorf("OriginFrom = %+v, want %+v", got, want)
	}
}

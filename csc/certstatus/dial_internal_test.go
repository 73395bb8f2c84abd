package certstatus

import (
	"errors"
	"testing"
)

// dialGuard refuses loopback (unless allowed), link-local, unspecified
// and multicast addresses, IPv4 mapped into IPv6 too, and allows private
// and public ones.
func TestDialGuard(t *testing.T) {
	for _, tt := range []struct {
		addr            string
		refused         bool
		refusedLoopback bool // with allowLoopback
	}{
		{"127.0.0.1:80", true, false},
		{"127.1.2.3:80", true, false},
		{"[::1]:80", true, false},
		{"[::ffff:127.0.0.1]:80", true, false},
		{"169.254.169.254:80", true, true},
		{"[::ffff:169.254.169.254]:80", true, true},
		{"[fe80::1]:80", true, true},
		{"0.0.0.0:80", true, true},
		{"0.1.2.3:80", true, true},
		{"[::]:80", true, true},
		{"224.0.0.1:80", true, true},
		{"[ff02::1]:80", true, true},
		{"10.1.2.3:80", false, false},
		{"172.16.0.1:80", false, false},
		{"192.168.1.1:80", false, false},
		{"[fd00::1]:80", false, false},
		{"192.0.2.10:80", false, false},
		{"[2001:db8::1]:443", false, false},
	} {
		for _, allow := range []bool{false, true} {
			err := dialGuard(allow)("tcp", tt.addr, nil)
			want := tt.refused
			if allow {
				want = tt.refusedLoopback
			}
			var refused *refusedAddress
			if got := errors.As(err, &refused); got != want {
				t.Errorf("%s (allowLoopback %v): %v, want refused %v", tt.addr, allow, err, want)
			}
		}
	}
}

package reqlog

import "testing"

// TestLogPath: the token of an enrollment link never reaches the access
// log; every other path is logged as it is.
func TestLogPath(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/oauth2/enroll/alice~c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA", "/oauth2/enroll/[REDACTED]"},
		{"/signd/oauth2/enroll/alice~x", "/signd/oauth2/enroll/[REDACTED]"},
		{"/oauth2/enroll/", "/oauth2/enroll/"},
		{"/oauth2/account", "/oauth2/account"},
		{"/csc/v1/info", "/csc/v1/info"},
	} {
		if got := LogPath(tc.path); got != tc.want {
			t.Errorf("LogPath(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

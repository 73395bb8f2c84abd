package pages

import "testing"

// Both languages have every enrollment page string, and every key the
// enrollment templates and the page's errors use exists.
func TestEnrollMessages(t *testing.T) {
	wantMessages(t, enrollMessages, "templates/enroll.html",
		"enroll.title", "enroll.refused", "enroll.error.password", "enroll.error.pin", "enroll.error.mismatch", "enroll.error.totp",
		"errorpage.crosssite", "errorpage.csrf", "errorpage.request")
}

package admin

import (
	"reflect"
	"slices"
	"testing"
)

// TestLocalMethodSet: Local promotes its subjects' exported methods, so a
// method added to a subject becomes Local's too. Transports reach Local only
// through Operations (admin socket, provisioning API, pending approval),
// never by name; still, what Local offers beyond Service is listed here, so
// that a new one is a decision.
func TestLocalMethodSet(t *testing.T) {
	beyond := map[string]string{
		"Authorize":       "the socket's store backup and check: the same role check and audit",
		"Refused":         "a transport's refusal before any operation (the API's handshake)",
		"Enroll":          "oauth/enroll's Backend: the user's own link, no operator",
		"EnrollmentUser":  "oauth/enroll's Backend",
		"CheckIDTokenAlg": "admin/hsmkeys, for admin/clients' AddClient (which holds the role)",
		"KeyStore":        "admin/hsmkeys, for admin/audit: the token or KindUnavailable",
		"User":            "admin/users, for admin/hsmkeys: a user's view without an audit entry",
	}
	service := reflect.TypeFor[Service]()
	local := reflect.TypeFor[*Local]()
	var extra []string
	for i := range local.NumMethod() {
		name := local.Method(i).Name
		if _, ok := service.MethodByName(name); !ok {
			extra = append(extra, name)
			if beyond[name] == "" {
				t.Errorf("Local has method %s beyond Service: add it to this list with its reason, or keep it off Local", name)
			}
		}
	}
	for name := range beyond {
		if !slices.Contains(extra, name) {
			t.Errorf("%s is listed but Local has no such method beyond Service", name)
		}
	}
}

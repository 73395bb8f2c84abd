package daemonaudit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// TestOIDCKeyEntries: what the daemon changes by itself in the OIDC keys at
// start, from the keys before and after: a key created, a next key
// promoted (naming the key it retired), retired keys purged; nothing when
// nothing changed.
func TestOIDCKeyEntries(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	key := func(kid, alg string, st store.SigningKeyState) store.SigningKey {
		return store.SigningKey{KID: kid, Algorithm: alg, State: st, Label: "signd-oidc-" + kid}
	}
	for _, tc := range []struct {
		name          string
		before, after []store.SigningKey
		want          []string // kind|target|reason|fields
	}{
		{"unchanged", []store.SigningKey{key("a", "RS256", store.SigningKeyActive)}, []store.SigningKey{key("a", "RS256", store.SigningKeyActive)}, nil},
		{"first key", nil, []store.SigningKey{key("a", "RS256", store.SigningKeyActive)},
			[]string{"oidc_key_created|oidc-key:a||map[alg:RS256 label:signd-oidc-a state:active]"}},
		{"next promoted",
			[]store.SigningKey{key("a", "ES256", store.SigningKeyActive), key("b", "ES256", store.SigningKeyNext)},
			[]store.SigningKey{key("a", "ES256", store.SigningKeyRetired), key("b", "ES256", store.SigningKeyActive)},
			[]string{"oidc_keys_rotated|oidc-key:b|next key promoted at start|map[active:b alg:ES256 retired:a]"}},
		{"next promoted, none active", []store.SigningKey{key("b", "PS256", store.SigningKeyNext)},
			[]store.SigningKey{key("b", "PS256", store.SigningKeyActive)},
			[]string{"oidc_keys_rotated|oidc-key:b|next key promoted at start|map[active:b alg:PS256]"}},
		{"purged", []store.SigningKey{key("r2", "RS256", store.SigningKeyRetired), key("r1", "RS256", store.SigningKeyRetired), key("a", "RS256", store.SigningKeyActive)},
			[]store.SigningKey{key("a", "RS256", store.SigningKeyActive)},
			[]string{"oidc_keys_rotated||retired keys purged: their ID tokens have expired|map[count:2 purged:r1 r2]"}},
	} {
		var got []string
		for _, a := range OIDCKeys(tc.before, tc.after, now) {
			if a.Actor != "signd" || a.Outcome != store.AuditOK || !a.Time.Equal(now) {
				t.Errorf("%s: entry %+v", tc.name, a)
			}
			got = append(got, fmt.Sprintf("%s|%s|%s|%v", a.Kind, a.Target, a.Reason, a.Fields))
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

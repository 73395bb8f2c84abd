package act

import (
	"fmt"
	"strings"
	"testing"

	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/store"
)

// TestFailStoreUnavailable: a commit whose answer was lost
// (store.ErrOutcomeUnknown) is still KindUnavailable, but the operator is
// told the truth — the change may have been applied — and how to check
// before trying again; a write that failed outright keeps "try again".
func TestFailStoreUnavailable(t *testing.T) {
	lost := fmt.Errorf("%w: etcd: context deadline exceeded", store.ErrOutcomeUnknown)
	full := fmt.Errorf("%w: bolt: write: no space left on device", store.ErrUnavailable)
	for _, tt := range []struct {
		op   string
		err  error
		want []string
	}{
		{`credential "c1"`, lost, []string{"answer was lost", "may or may not have been applied", "check with `signd credential show c1` before trying again", "context deadline exceeded"}},
		{`client "rp"`, lost, []string{"check with `signd client show rp`"}},
		{`user "alice"`, lost, []string{"check with `signd user show alice`"}},
		{`client "my rp"`, lost, []string{"check with `signd client show \"my rp\"`"}},
		{"create credential", lost, []string{"check with `signd credential list`"}},
		{"enroll TSA key", lost, []string{"check with `signd audit export --kind tsa_enrolled`"}},
		{"create OIDC signing key", lost, []string{"check with `signd oidc keys list`"}},
		{"userinfo", lost, []string{"check with the matching list or show command"}},
		{`credential "c1"`, full, []string{"the store cannot write now (disk full or failing?), try again", "no space left"}},
	} {
		err := (&Core{}).Fail(tt.op, tt.err)
		if ops.KindOf(err) != ops.KindUnavailable {
			t.Errorf("Fail(%q, %v) kind %s, want unavailable", tt.op, tt.err, ops.KindOf(err))
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Fail(%q, %v) = %q, want %q in it", tt.op, tt.err, err, w)
			}
		}
		if store.MayHaveCommitted(tt.err) == strings.Contains(err.Error(), "try again:") {
			t.Errorf("Fail(%q, %v) = %q: says try again for a change that may be applied, or not for one that is not", tt.op, tt.err, err)
		}
	}
}

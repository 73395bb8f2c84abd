package hsm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/hsmtest"
)

// TestRefusedKeyNotDestroyed: a generated key that is refused is
// destroyed, and the error says "(destroyed)" only when both
// C_DestroyObject calls succeeded; otherwise it says "(not destroyed: …)"
// with the return code, so that an operator knows an object was left.
func TestRefusedKeyNotDestroyed(t *testing.T) {
	simulatedOnSoftHSM2(t)
	ctx := context.Background()
	for _, tt := range []struct {
		failures int // C_DestroyObject calls that fail
		want     string
		left     int
	}{
		{0, "(destroyed)", 0},
		{1, "(not destroyed: C_DestroyObject: CKR_FUNCTION_NOT_SUPPORTED", 1},
		{2, "(not destroyed: C_DestroyObject: CKR_FUNCTION_NOT_SUPPORTED (0x54); C_DestroyObject: CKR_FUNCTION_NOT_SUPPORTED", 2},
	} {
		t.Run(fmt.Sprint(tt.failures), func(t *testing.T) {
			cfg := config(faultTok)
			cfg.RequireImmutableKeys = true
			tok, fake := openFault(t, cfg)
			label := fmt.Sprintf("refused-left-%d", tt.failures)
			t.Cleanup(func() {
				_ = tok.run(ctx, "cleanup", func(s pkcs11.SessionHandle) error {
					hs, err := tok.obj.FindAll(s, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)})
					for _, h := range hs {
						_ = tok.lib.DestroyObject(s, h)
					}
					return err
				})
			})
			// A freeze that cannot be tested: the key is refused.
			fake.FailOnce("SetAttributeValue", pkcs11.CKR_ARGUMENTS_BAD)
			if tt.failures > 0 {
				fake.Inject("DestroyObject", hsmtest.Fault{Code: pkcs11.CKR_FUNCTION_NOT_SUPPORTED, Times: tt.failures})
			}
			_, err := tok.GenerateRSA(ctx, label, 2048)
			if !errors.Is(err, ErrKeyNotFrozen) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want ErrKeyNotFrozen saying %q", err, tt.want)
			}
			if tt.failures > 0 && strings.Contains(err.Error(), "(destroyed)") {
				t.Errorf("error %v says (destroyed)", err)
			}
			if n := countObjects(t, tok, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)}); n != tt.left {
				t.Errorf("%d objects left, want %d", n, tt.left)
			}
		})
	}
}

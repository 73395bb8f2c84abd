package hsm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
)

// TestFreezeUntested: only an explicit refusal (freezeRefusal) of the
// freeze test's write or copy counts as a frozen key. Any other answer
// of the caller class is the defect "freeze could not be tested", which
// pkcs11.require_immutable_keys refuses; an ambiguous one
// (CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED, CKR_DEVICE_MEMORY) fails the
// generation, the key is destroyed and the token stays available.
func TestFreezeUntested(t *testing.T) {
	simulatedOnSoftHSM2(t) // SoftHSM2 refuses both with CKR_ACTION_PROHIBITED
	ctx := context.Background()
	tests := []struct {
		method string
		code   uint
		defect string // "" when the generation fails with code
	}{
		{"SetAttributeValue", pkcs11.CKR_ARGUMENTS_BAD, "freeze could not be tested (C_SetAttributeValue: CKR_ARGUMENTS_BAD"},
		{"SetAttributeValue", pkcs11.CKR_ATTRIBUTE_VALUE_INVALID, "freeze could not be tested (C_SetAttributeValue: CKR_ATTRIBUTE_VALUE_INVALID"},
		{"SetAttributeValue", pkcs11.CKR_ATTRIBUTE_TYPE_INVALID, "freeze could not be tested (C_SetAttributeValue: CKR_ATTRIBUTE_TYPE_INVALID"},
		{"CopyObject", pkcs11.CKR_ARGUMENTS_BAD, "freeze could not be tested (C_CopyObject: CKR_ARGUMENTS_BAD"},
		{"CopyObject", pkcs11.CKR_HOST_MEMORY, "freeze could not be tested (C_CopyObject: CKR_HOST_MEMORY"},
		{"SetAttributeValue", pkcs11.CKR_GENERAL_ERROR, ""},
		{"SetAttributeValue", pkcs11.CKR_DEVICE_MEMORY, ""},
		{"CopyObject", pkcs11.CKR_FUNCTION_FAILED, ""},
		{"CopyObject", pkcs11.CKR_GENERAL_ERROR, ""},
	}
	for i, tt := range tests {
		name := ckr.Name(pkcs11.Error(tt.code))
		t.Run(tt.method+"/"+name, func(t *testing.T) {
			for _, require := range []bool{false, true} {
				cfg := config(faultTok)
				cfg.RequireImmutableKeys = require
				tok, fake := openFault(t, cfg)
				label := fmt.Sprintf("untested-%d-%v", i, require)
				fake.FailOnce(tt.method, tt.code)
				info, err := tok.GenerateRSA(ctx, label, 2048)
				if err == nil {
					t.Cleanup(func() { _ = tok.DestroyKey(ctx, info.ID) })
				}
				if fake.Calls(tt.method) == 0 {
					t.Fatalf("C_%s never called", tt.method)
				}
				switch {
				case tt.defect == "" && (err == nil || ReturnCode(err) != name):
					t.Fatalf("require %v: %v, want the generation to fail with %s", require, err, name)
				case tt.defect != "" && !require && (err != nil || !hasDefect(info.Defects, tt.defect)):
					t.Fatalf("%v; defects %q, want %q", err, defectsOf(info), tt.defect)
				case tt.defect != "" && require && (!errors.Is(err, ErrKeyNotFrozen) || !strings.Contains(err.Error(), tt.defect)):
					t.Fatalf("require_immutable_keys: %v, want ErrKeyNotFrozen naming %q", err, tt.defect)
				}
				if err != nil {
					if n := countObjects(t, tok, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_LABEL, label)}); n != 0 {
						t.Errorf("%d objects left behind", n)
					}
				}
				if !tok.Available() || tok.Status().Outages != 0 {
					t.Fatalf("token marked down: %+v", tok.Status())
				}
			}
		})
	}
}

// defectsOf is info's defects, or nil for no info.
func defectsOf(info *KeyInfo) []string {
	if info == nil {
		return nil
	}
	return info.Defects
}

package ckr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"
)

// TestClassifyTable: every return value PKCS#11 v2.40 names is classified
// explicitly, once, in classes.
func TestClassifyTable(t *testing.T) {
	codes := []uint{pkcs11.CKR_VENDOR_DEFINED}
	for c := uint(0); c <= 0x300; c++ {
		codes = append(codes, c)
	}
	named := 0
	for _, c := range codes {
		if strings.HasPrefix(Name(pkcs11.Error(c)), "CKR_0x") {
			continue // not a code miekg/pkcs11 knows
		}
		named++
		if _, ok := classes[c]; !ok && c != pkcs11.CKR_VENDOR_DEFINED {
			t.Errorf("%s (0x%x) is not in the classification table", Name(pkcs11.Error(c)), c)
		}
	}
	if named < 80 {
		t.Fatalf("only %d named return codes: is miekg/pkcs11's table gone?", named)
	}
	if got := Classify(pkcs11.Error(pkcs11.CKR_VENDOR_DEFINED | 7)); got != Caller {
		t.Errorf("a vendor-defined code is %v, want caller", got)
	}
	// Each class has its members.
	count := map[Class]int{}
	for _, r := range classes {
		count[r]++
	}
	for _, r := range []Class{Caller, Session, Login, Device, PIN} {
		if count[r] == 0 {
			t.Errorf("class %v is empty", r)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want Class
	}{
		{nil, Caller},
		{ErrKeyNotFound, Caller},
		{ErrStaleModule, Login},
		{ErrNotInitialized, Device},
		{pkcs11.Error(pkcs11.CKR_SESSION_CLOSED), Session},
		{pkcs11.Error(pkcs11.CKR_SESSION_HANDLE_INVALID), Session},
		{pkcs11.Error(pkcs11.CKR_USER_NOT_LOGGED_IN), Login},
		{pkcs11.Error(pkcs11.CKR_OBJECT_HANDLE_INVALID), Login},
		{pkcs11.Error(pkcs11.CKR_KEY_HANDLE_INVALID), Login},
		{pkcs11.Error(pkcs11.CKR_DEVICE_ERROR), Device},
		{pkcs11.Error(pkcs11.CKR_DEVICE_REMOVED), Device},
		{pkcs11.Error(pkcs11.CKR_TOKEN_NOT_PRESENT), Device},
		{pkcs11.Error(pkcs11.CKR_GENERAL_ERROR), Confirm},
		{Wrap("C_GetTokenInfo", pkcs11.Error(pkcs11.CKR_GENERAL_ERROR)), Device},
		{&refusedError{Wrap("C_GenerateKeyPair", pkcs11.Error(pkcs11.CKR_GENERAL_ERROR))}, Caller},
		{pkcs11.Error(pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED), Device},
		{pkcs11.Error(pkcs11.CKR_PIN_INCORRECT), PIN},
		{pkcs11.Error(pkcs11.CKR_PIN_LOCKED), PIN},
		{pkcs11.Error(pkcs11.CKR_PIN_EXPIRED), PIN},
		{pkcs11.Error(pkcs11.CKR_PIN_INVALID), PIN},
		{pkcs11.Error(pkcs11.CKR_PIN_LEN_RANGE), PIN},
		{pkcs11.Error(pkcs11.CKR_FUNCTION_FAILED), Confirm},
		{pkcs11.Error(pkcs11.CKR_SLOT_ID_INVALID), Device},
		{pkcs11.Error(pkcs11.CKR_DEVICE_MEMORY), Confirm},
		{pkcs11.Error(pkcs11.CKR_OPERATION_ACTIVE), Session},
		{pkcs11.Error(pkcs11.CKR_USER_PIN_NOT_INITIALIZED), PIN},
		{pkcs11.Error(pkcs11.CKR_USER_ALREADY_LOGGED_IN), Caller},
		{pkcs11.Error(pkcs11.CKR_MECHANISM_INVALID), Caller},
		{fmt.Errorf("%w: %w", ErrTokenGone, Wrap("C_GetTokenInfo", pkcs11.Error(pkcs11.CKR_FUNCTION_FAILED))), Device},
		{Discard(Wrap("C_Sign", pkcs11.Error(pkcs11.CKR_SESSION_CLOSED))), Session},
		{fmt.Errorf("wrapped: %w", Wrap("C_Sign", pkcs11.Error(pkcs11.CKR_KEY_HANDLE_INVALID))), Login},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

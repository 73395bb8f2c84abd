package hsmtest

import (
	"errors"
	"testing"
	"time"

	"github.com/miekg/pkcs11"
)

// stub is a module whose calls used here succeed.
type stub struct{ Ctx }

func (stub) Sign(pkcs11.SessionHandle, []byte) ([]byte, error)    { return []byte("sig"), nil }
func (stub) GetSlotList(bool) ([]uint, error)                     { return []uint{7}, nil }
func (stub) GetTokenInfo(uint) (pkcs11.TokenInfo, error)          { return pkcs11.TokenInfo{Label: "t"}, nil }
func (stub) OpenSession(uint, uint) (pkcs11.SessionHandle, error) { return 1, nil }
func (stub) Finalize() error                                      { return nil }

func code(err error) uint {
	var c pkcs11.Error
	if errors.As(err, &c) {
		return uint(c)
	}
	return pkcs11.CKR_OK
}

func TestFaults(t *testing.T) {
	f := Wrap(stub{})
	if sig, err := f.Sign(1, nil); err != nil || string(sig) != "sig" {
		t.Fatalf("no fault: %q %v", sig, err)
	}

	// Times: the fault applies to exactly that many calls.
	f.Inject("Sign", Fault{Code: pkcs11.CKR_DEVICE_ERROR, Times: 2})
	for i, want := range []uint{pkcs11.CKR_DEVICE_ERROR, pkcs11.CKR_DEVICE_ERROR, pkcs11.CKR_OK} {
		if _, err := f.Sign(1, nil); code(err) != want {
			t.Errorf("call %d: %v, want 0x%x", i, err, want)
		}
	}
	// FailOnce, and only for its method.
	f.FailOnce("SignInit", pkcs11.CKR_KEY_HANDLE_INVALID)
	if _, err := f.Sign(1, nil); err != nil {
		t.Errorf("Sign hit by a SignInit fault: %v", err)
	}
	// Delay without a code: latency, then the real call.
	f.Inject("Sign", Fault{Delay: 30 * time.Millisecond, Times: 1})
	start := time.Now()
	if _, err := f.Sign(1, nil); err != nil || time.Since(start) < 30*time.Millisecond {
		t.Errorf("delayed call: %v after %v", err, time.Since(start))
	}
	// Hook decides per call.
	f.Hook(func(m string) error {
		if m == "GetTokenInfo" {
			return pkcs11.Error(pkcs11.CKR_GENERAL_ERROR)
		}
		return nil
	})
	if _, err := f.GetTokenInfo(7); code(err) != pkcs11.CKR_GENERAL_ERROR {
		t.Errorf("hooked GetTokenInfo: %v", err)
	}
	f.Clear()

	// Token gone: no slot listed, token and session calls fail, module
	// calls pass.
	f.SetGone(true)
	if slots, err := f.GetSlotList(true); err != nil || len(slots) != 0 {
		t.Errorf("slot list with the token gone: %v %v", slots, err)
	}
	if _, err := f.GetTokenInfo(7); code(err) != pkcs11.CKR_TOKEN_NOT_PRESENT {
		t.Errorf("GetTokenInfo with the token gone: %v", err)
	}
	if _, err := f.OpenSession(7, 0); code(err) != pkcs11.CKR_TOKEN_NOT_PRESENT {
		t.Errorf("OpenSession with the token gone: %v", err)
	}
	if _, err := f.Sign(1, nil); code(err) != pkcs11.CKR_DEVICE_REMOVED {
		t.Errorf("Sign with the token gone: %v", err)
	}
	if err := f.Finalize(); err != nil {
		t.Errorf("Finalize with the token gone: %v", err)
	}
	f.SetGone(false)
	if slots, err := f.GetSlotList(true); err != nil || len(slots) != 1 {
		t.Errorf("slot list after the token came back: %v %v", slots, err)
	}
	if n := f.Calls("Sign"); n != 7 {
		t.Errorf("%d Sign calls counted, want 7", n)
	}
}

package hsm

import (
	"sync"

	"github.com/miekg/pkcs11"
)

// faultP11 wraps the real module and injects faults: before every call it
// asks Before, and returns Before's error instead of calling the module
// when there is one. It exists only to inject faults; all other behaviour
// is the real SoftHSM2's.
type faultP11 struct {
	p11
	mu     sync.Mutex
	before func(method string) error
	calls  map[string]int
}

func newFaultP11(real p11) *faultP11 {
	return &faultP11{p11: real, calls: make(map[string]int)}
}

// setBefore installs the fault hook; nil removes it.
func (f *faultP11) setBefore(fn func(method string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before = fn
}

// failOnce makes the next call of method fail with code.
func (f *faultP11) failOnce(method string, code uint) {
	done := false
	f.setBefore(func(m string) error {
		if m != method || done {
			return nil
		}
		done = true
		return pkcs11.Error(code)
	})
}

func (f *faultP11) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *faultP11) hook(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if f.before == nil {
		return nil
	}
	return f.before(method)
}

func (f *faultP11) GetSlotList(tokenPresent bool) ([]uint, error) {
	if err := f.hook("GetSlotList"); err != nil {
		return nil, err
	}
	return f.p11.GetSlotList(tokenPresent)
}

func (f *faultP11) GetTokenInfo(slotID uint) (pkcs11.TokenInfo, error) {
	if err := f.hook("GetTokenInfo"); err != nil {
		return pkcs11.TokenInfo{}, err
	}
	return f.p11.GetTokenInfo(slotID)
}

func (f *faultP11) OpenSession(slotID uint, flags uint) (pkcs11.SessionHandle, error) {
	if err := f.hook("OpenSession"); err != nil {
		return 0, err
	}
	return f.p11.OpenSession(slotID, flags)
}

func (f *faultP11) CloseSession(sh pkcs11.SessionHandle) error {
	if err := f.hook("CloseSession"); err != nil {
		return err
	}
	return f.p11.CloseSession(sh)
}

func (f *faultP11) GetSessionInfo(sh pkcs11.SessionHandle) (pkcs11.SessionInfo, error) {
	if err := f.hook("GetSessionInfo"); err != nil {
		return pkcs11.SessionInfo{}, err
	}
	return f.p11.GetSessionInfo(sh)
}

func (f *faultP11) Login(sh pkcs11.SessionHandle, userType uint, pin string) error {
	if err := f.hook("Login"); err != nil {
		return err
	}
	return f.p11.Login(sh, userType, pin)
}

func (f *faultP11) FindObjectsInit(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) error {
	if err := f.hook("FindObjectsInit"); err != nil {
		return err
	}
	return f.p11.FindObjectsInit(sh, temp)
}

func (f *faultP11) FindObjects(sh pkcs11.SessionHandle, max int) ([]pkcs11.ObjectHandle, bool, error) {
	if err := f.hook("FindObjects"); err != nil {
		return nil, false, err
	}
	return f.p11.FindObjects(sh, max)
}

func (f *faultP11) FindObjectsFinal(sh pkcs11.SessionHandle) error {
	if err := f.hook("FindObjectsFinal"); err != nil {
		return err
	}
	return f.p11.FindObjectsFinal(sh)
}

func (f *faultP11) GetAttributeValue(sh pkcs11.SessionHandle, o pkcs11.ObjectHandle, a []*pkcs11.Attribute) ([]*pkcs11.Attribute, error) {
	if err := f.hook("GetAttributeValue"); err != nil {
		return nil, err
	}
	return f.p11.GetAttributeValue(sh, o, a)
}

func (f *faultP11) GenerateKeyPair(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, public, private []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	if err := f.hook("GenerateKeyPair"); err != nil {
		return 0, 0, err
	}
	return f.p11.GenerateKeyPair(sh, m, public, private)
}

func (f *faultP11) CreateObject(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	if err := f.hook("CreateObject"); err != nil {
		return 0, err
	}
	return f.p11.CreateObject(sh, temp)
}

func (f *faultP11) DestroyObject(sh pkcs11.SessionHandle, oh pkcs11.ObjectHandle) error {
	if err := f.hook("DestroyObject"); err != nil {
		return err
	}
	return f.p11.DestroyObject(sh, oh)
}

func (f *faultP11) SignInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if err := f.hook("SignInit"); err != nil {
		return err
	}
	return f.p11.SignInit(sh, m, o)
}

func (f *faultP11) Sign(sh pkcs11.SessionHandle, message []byte) ([]byte, error) {
	if err := f.hook("Sign"); err != nil {
		return nil, err
	}
	return f.p11.Sign(sh, message)
}

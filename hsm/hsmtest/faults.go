package hsmtest

import (
	"sync"
	"time"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/cryptoki"
)

// Ctx is the PKCS#11 interface an hsm.Token calls: the one definition,
// cryptoki.Ctx, which hsm.Ctx names too (this package cannot import hsm:
// hsm's internal tests import it).
type Ctx = cryptoki.Ctx

// Fault is what an injected call does.
type Fault struct {
	// Code is the PKCS#11 return value the call fails with; 0 (CKR_OK)
	// lets the call through to the module (after Delay).
	Code uint
	// Delay is latency added before the call, or before the failure.
	Delay time.Duration
	// Times is how many calls the fault applies to; 0 means every call
	// until Clear.
	Times int
}

// Faults wraps a module and injects faults into its calls. Methods are
// named as in Ctx ("Sign", "SignInit", "GetTokenInfo", ...). It is safe
// for concurrent use.
type Faults struct {
	Ctx // the wrapped module

	mu     sync.Mutex
	faults map[string]*Fault
	hook   func(method string) error
	gone   bool
	calls  map[string]int

	// renumber: session handles are the lowest numbers free (see
	// ReuseSessionNumbers); numbers maps each to the module's session.
	renumber bool
	numbers  map[pkcs11.SessionHandle]pkcs11.SessionHandle
}

// Wrap returns a Faults over c that injects nothing until told to.
func Wrap(c Ctx) *Faults {
	return &Faults{Ctx: c, faults: make(map[string]*Fault), calls: make(map[string]int)}
}

// Inject makes calls of method behave as flt, replacing an earlier fault
// for method.
func (f *Faults) Inject(method string, flt Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[method] = &flt
}

// FailOnce makes the next call of method fail with code.
func (f *Faults) FailOnce(method string, code uint) {
	f.Inject(method, Fault{Code: code, Times: 1})
}

// Hook installs fn, asked before every call (after the token-gone check,
// before injected faults): a non-nil error is returned instead of calling
// the module. nil removes it. fn runs under the Faults' lock, so it must
// not call the Faults.
func (f *Faults) Hook(fn func(method string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = fn
}

// SetGone makes the token vanish (true) or come back (false), as a
// removed token or a powered-off HSM does: C_GetSlotList(true) lists no
// slot, C_GetTokenInfo and C_OpenSession answer CKR_TOKEN_NOT_PRESENT, and
// every call on a session answers CKR_DEVICE_REMOVED. C_Initialize and
// C_Finalize reach the module.
func (f *Faults) SetGone(gone bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone = gone
}

// ReuseSessionNumbers makes the Faults number sessions as opencryptoki
// and tpm2-pkcs11 do: C_OpenSession returns the lowest number not in use,
// so the number of a closed session comes back with the next open
// (SoftHSM2, the module under the Faults, never reuses one). Calls on a
// number go to the module's session it stands for now; a number not in use
// answers CKR_SESSION_HANDLE_INVALID. C_CloseSession frees the number
// whatever the module answers, and C_Finalize frees them all. Call it
// before the Token opens its sessions; Clear leaves it on.
func (f *Faults) ReuseSessionNumbers() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renumber = true
	f.numbers = make(map[pkcs11.SessionHandle]pkcs11.SessionHandle)
}

// session returns the module's session that sh stands for.
func (f *Faults) session(sh pkcs11.SessionHandle) (pkcs11.SessionHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.renumber {
		return sh, nil
	}
	real, ok := f.numbers[sh]
	if !ok {
		return 0, pkcs11.Error(pkcs11.CKR_SESSION_HANDLE_INVALID)
	}
	return real, nil
}

// number gives the module's new session real the lowest free number.
func (f *Faults) number(real pkcs11.SessionHandle) pkcs11.SessionHandle {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.renumber {
		return real
	}
	n := pkcs11.SessionHandle(1)
	for ; ; n++ {
		if _, used := f.numbers[n]; !used {
			break
		}
	}
	f.numbers[n] = real
	return n
}

// Clear removes every injected fault, the hook and the token-gone state.
// Call counts stay.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
	f.hook = nil
	f.gone = false
}

// Calls returns how many times method was called, injected failures
// included.
func (f *Faults) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// before decides a call of method: a non-nil error is the call's answer.
// gone is the answer while the token is gone (0: not affected).
func (f *Faults) before(method string, gone uint) error {
	f.mu.Lock()
	f.calls[method]++
	if f.gone && gone != 0 {
		f.mu.Unlock()
		return pkcs11.Error(gone)
	}
	if hook := f.hook; hook != nil {
		// The hook runs without the lock: it may change the faults.
		f.mu.Unlock()
		if err := hook(method); err != nil {
			return err
		}
		f.mu.Lock()
	}
	var flt Fault
	if p := f.faults[method]; p != nil {
		flt = *p
		if p.Times > 0 {
			if p.Times--; p.Times == 0 {
				delete(f.faults, method)
			}
		}
	}
	f.mu.Unlock()
	if flt.Delay > 0 {
		time.Sleep(flt.Delay)
	}
	if flt.Code != pkcs11.CKR_OK {
		return pkcs11.Error(flt.Code)
	}
	return nil
}

// Answers of a gone token.
const (
	onSession = pkcs11.CKR_DEVICE_REMOVED
	onToken   = pkcs11.CKR_TOKEN_NOT_PRESENT
)

func (f *Faults) isGone() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gone
}

// Initialize implements Ctx.
func (f *Faults) Initialize(opts ...pkcs11.InitializeOption) error {
	if err := f.before("Initialize", 0); err != nil {
		return err
	}
	return f.Ctx.Initialize(opts...)
}

// Finalize implements Ctx.
func (f *Faults) Finalize() error {
	if err := f.before("Finalize", 0); err != nil {
		return err
	}
	f.mu.Lock()
	if f.renumber {
		clear(f.numbers)
	}
	f.mu.Unlock()
	return f.Ctx.Finalize()
}

// GetInfo implements Ctx.
func (f *Faults) GetInfo() (pkcs11.Info, error) {
	if err := f.before("GetInfo", 0); err != nil {
		return pkcs11.Info{}, err
	}
	return f.Ctx.GetInfo()
}

// GetMechanismList implements Ctx.
func (f *Faults) GetMechanismList(slotID uint) ([]*pkcs11.Mechanism, error) {
	if err := f.before("GetMechanismList", onToken); err != nil {
		return nil, err
	}
	return f.Ctx.GetMechanismList(slotID)
}

// GetMechanismInfo implements Ctx.
func (f *Faults) GetMechanismInfo(slotID uint, m []*pkcs11.Mechanism) (pkcs11.MechanismInfo, error) {
	if err := f.before("GetMechanismInfo", onToken); err != nil {
		return pkcs11.MechanismInfo{}, err
	}
	return f.Ctx.GetMechanismInfo(slotID, m)
}

// GetSlotList implements Ctx.
func (f *Faults) GetSlotList(tokenPresent bool) ([]uint, error) {
	if err := f.before("GetSlotList", 0); err != nil {
		return nil, err
	}
	if tokenPresent && f.isGone() {
		return []uint{}, nil
	}
	return f.Ctx.GetSlotList(tokenPresent)
}

// GetTokenInfo implements Ctx.
func (f *Faults) GetTokenInfo(slotID uint) (pkcs11.TokenInfo, error) {
	if err := f.before("GetTokenInfo", onToken); err != nil {
		return pkcs11.TokenInfo{}, err
	}
	return f.Ctx.GetTokenInfo(slotID)
}

// OpenSession implements Ctx.
func (f *Faults) OpenSession(slotID uint, flags uint) (pkcs11.SessionHandle, error) {
	if err := f.before("OpenSession", onToken); err != nil {
		return 0, err
	}
	s, err := f.Ctx.OpenSession(slotID, flags)
	if err != nil {
		return 0, err
	}
	return f.number(s), nil
}

// CloseSession implements Ctx.
func (f *Faults) CloseSession(sh pkcs11.SessionHandle) error {
	if err := f.before("CloseSession", onSession); err != nil {
		return err
	}
	real, err := f.session(sh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.renumber {
		delete(f.numbers, sh)
	}
	f.mu.Unlock()
	return f.Ctx.CloseSession(real)
}

// GetSessionInfo implements Ctx.
func (f *Faults) GetSessionInfo(sh pkcs11.SessionHandle) (pkcs11.SessionInfo, error) {
	if err := f.before("GetSessionInfo", onSession); err != nil {
		return pkcs11.SessionInfo{}, err
	}
	sh, err := f.session(sh)
	if err != nil {
		return pkcs11.SessionInfo{}, err
	}
	return f.Ctx.GetSessionInfo(sh)
}

// Login implements Ctx.
func (f *Faults) Login(sh pkcs11.SessionHandle, userType uint, pin string) error {
	if err := f.before("Login", onSession); err != nil {
		return err
	}
	sh, err := f.session(sh)
	if err != nil {
		return err
	}
	return f.Ctx.Login(sh, userType, pin)
}

// FindObjectsInit implements Ctx.
func (f *Faults) FindObjectsInit(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) error {
	if err := f.before("FindObjectsInit", onSession); err != nil {
		return err
	}
	sh, err := f.session(sh)
	if err != nil {
		return err
	}
	return f.Ctx.FindObjectsInit(sh, temp)
}

// FindObjects implements Ctx.
func (f *Faults) FindObjects(sh pkcs11.SessionHandle, max int) ([]pkcs11.ObjectHandle, bool, error) {
	if err := f.before("FindObjects", onSession); err != nil {
		return nil, false, err
	}
	sh, err := f.session(sh)
	if err != nil {
		return nil, false, err
	}
	return f.Ctx.FindObjects(sh, max)
}

// FindObjectsFinal implements Ctx.
func (f *Faults) FindObjectsFinal(sh pkcs11.SessionHandle) error {
	if err := f.before("FindObjectsFinal", onSession); err != nil {
		return err
	}
	sh, err := f.session(sh)
	if err != nil {
		return err
	}
	return f.Ctx.FindObjectsFinal(sh)
}

// GetAttributeValue implements Ctx.
func (f *Faults) GetAttributeValue(sh pkcs11.SessionHandle, o pkcs11.ObjectHandle, a []*pkcs11.Attribute) ([]*pkcs11.Attribute, error) {
	if err := f.before("GetAttributeValue", onSession); err != nil {
		return nil, err
	}
	sh, err := f.session(sh)
	if err != nil {
		return nil, err
	}
	return f.Ctx.GetAttributeValue(sh, o, a)
}

// SetAttributeValue implements Ctx.
func (f *Faults) SetAttributeValue(sh pkcs11.SessionHandle, o pkcs11.ObjectHandle, a []*pkcs11.Attribute) error {
	if err := f.before("SetAttributeValue", onSession); err != nil {
		return err
	}
	sh, err := f.session(sh)
	if err != nil {
		return err
	}
	return f.Ctx.SetAttributeValue(sh, o, a)
}

// GenerateKeyPair implements Ctx.
func (f *Faults) GenerateKeyPair(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, public, private []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	if err := f.before("GenerateKeyPair", onSession); err != nil {
		return 0, 0, err
	}
	sh, err := f.session(sh)
	if err != nil {
		return 0, 0, err
	}
	return f.Ctx.GenerateKeyPair(sh, m, public, private)
}

// CreateObject implements Ctx.
func (f *Faults) CreateObject(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	if err := f.before("CreateObject", onSession); err != nil {
		return 0, err
	}
	sh, err := f.session(sh)
	if err != nil {
		return 0, err
	}
	return f.Ctx.CreateObject(sh, temp)
}

// CopyObject implements Ctx.
func (f *Faults) CopyObject(sh pkcs11.SessionHandle, o pkcs11.ObjectHandle, temp []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	if err := f.before("CopyObject", onSession); err != nil {
		return 0, err
	}
	sh, err := f.session(sh)
	if err != nil {
		return 0, err
	}
	return f.Ctx.CopyObject(sh, o, temp)
}

// DestroyObject implements Ctx.
func (f *Faults) DestroyObject(sh pkcs11.SessionHandle, oh pkcs11.ObjectHandle) error {
	if err := f.before("DestroyObject", onSession); err != nil {
		return err
	}
	sh, err := f.session(sh)
	if err != nil {
		return err
	}
	return f.Ctx.DestroyObject(sh, oh)
}

// SignInit implements Ctx.
func (f *Faults) SignInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if err := f.before("SignInit", onSession); err != nil {
		return err
	}
	sh, err := f.session(sh)
	if err != nil {
		return err
	}
	return f.Ctx.SignInit(sh, m, o)
}

// Sign implements Ctx.
func (f *Faults) Sign(sh pkcs11.SessionHandle, message []byte) ([]byte, error) {
	if err := f.before("Sign", onSession); err != nil {
		return nil, err
	}
	sh, err := f.session(sh)
	if err != nil {
		return nil, err
	}
	return f.Ctx.Sign(sh, message)
}

package module

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/cryptoki"
	"github.com/signd/signd/internal/safepath"
)

// modules is the only package-level state of package hsm and its parts: the PKCS#11 modules
// loaded so far, keyed by resolved path.
//
// It exists because C_Initialize and C_Finalize act on the whole process,
// not on a handle: a second C_Initialize fails with
// CKR_CRYPTOKI_ALREADY_INITIALIZED, and a C_Finalize by one user closes the
// sessions of every other. So all Tokens on one module share one *pkcs11.Ctx
// and one initialization, counted by references, and a re-initialization
// during recovery is ordered against every Token's calls (Module.Mu).
// Modules are never unloaded (no dlclose; see hsm.Token.Close).
var modules = struct {
	sync.Mutex
	byPath map[string]*Module
}{byPath: make(map[string]*Module)}

// Module is one loaded PKCS#11 library.
type Module struct {
	Path string       // resolved absolute path
	Lib  cryptoki.Ctx // the *pkcs11.Ctx; never Destroy()ed

	// refs counts the open Tokens using the module; guarded by modules.
	refs int

	// mu orders PKCS#11 calls against C_Finalize: Tokens hold mu.RLock
	// while they call into the module, reinit and release hold mu.Lock.
	Mu sync.RWMutex
	// epoch is bumped by every C_Finalize. Sessions and object handles
	// obtained in an earlier epoch are void (and their numbers may have
	// been handed out again), so a Token compares it before every call.
	Epoch       uint64
	Initialized bool

	// sessMu guards sessions and serial: every session number the module
	// handed out in this epoch and still counts as open, with the serial
	// of the C_OpenSession that returned it (see session).
	sessMu   sync.RWMutex // ours, on every operation, takes the read lock
	sessions map[pkcs11.SessionHandle]uint64
	serial   uint64
	// numberMu makes C_OpenSession and the recording of its number one
	// step, and the check that a number is still ours and its
	// C_CloseSession another (OpenSession, CloseSession): otherwise a
	// session closed behind the package's back (a device reset,
	// C_CloseAllSessions) lets one goroutine close the number that
	// another's C_OpenSession has just been given, before it is recorded,
	// and the other then signs on a closed session (tpm2-pkcs11 frees the
	// session under a thread still inside C_Sign).
	numberMu sync.Mutex

	// copyMu keeps finds away from a key's copy in the making: the
	// freeze test (keyobj.Objects.FreezeDefects) holds the write lock from C_CopyObject
	// to C_DestroyObject, every find (keyobj.Objects.Find) the read lock. A
	// session object is visible to every session of the process, and a
	// copy does not get its template at once: SoftHSM2 makes the copy
	// with all of the key's attributes (CKA_TOKEN true, the key's
	// CKA_ID), then applies the template, so a find in between meets
	// two keys with one ID (ErrAmbiguousKey). Other processes never see
	// our session objects.
	CopyMu sync.RWMutex
}

// Session is a session handle together with the serial of the
// C_OpenSession that returned it. opencryptoki and tpm2-pkcs11 hand the
// number of a closed session out again with the next C_OpenSession
// (SoftHSM2 never does), so a number that still answers
// C_GetSessionInfo proves nothing: it may be another session now, even
// this Token's own persistent one. A session is ours only while the
// module registry still maps its number to its serial (Module.Ours).
type Session struct {
	H      pkcs11.SessionHandle
	Serial uint64
}

// OpenSession calls C_OpenSession through lib (the module, or a wrapper
// of it) and records the number it returns, as one step against
// CloseSession.
func (m *Module) OpenSession(lib cryptoki.Ctx, slot, flags uint) (Session, error) {
	m.numberMu.Lock()
	defer m.numberMu.Unlock()
	h, err := lib.OpenSession(slot, flags)
	if err != nil {
		return Session{}, ckr.Wrap("C_OpenSession", err)
	}
	return m.opened(h), nil
}

// CloseSession calls C_CloseSession through lib on s's number if it still
// stands for s (Forget), as one step against OpenSession: a number the
// module has handed out again belongs to another session, which must not
// be closed.
func (m *Module) CloseSession(lib cryptoki.Ctx, s Session) error {
	m.numberMu.Lock()
	defer m.numberMu.Unlock()
	if !m.Forget(s) {
		return nil
	}
	return ckr.Wrap("C_CloseSession", lib.CloseSession(s.H))
}

// opened records h, just returned by C_OpenSession. A session that
// carried the number before is closed (the module would not reuse an
// open number), whoever still holds it.
func (m *Module) opened(h pkcs11.SessionHandle) Session {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[pkcs11.SessionHandle]uint64)
	}
	m.serial++
	m.sessions[h] = m.serial
	return Session{H: h, Serial: m.serial}
}

// Ours reports whether s's number still stands for s: no C_OpenSession
// returned the number again since, and nobody closed it through this
// package.
func (m *Module) Ours(s Session) bool {
	if s.H == 0 {
		return false
	}
	m.sessMu.RLock()
	defer m.sessMu.RUnlock()
	return m.sessions[s.H] == s.Serial
}

// Forget drops s from the registry and reports whether it was still
// ours. A session the module reported closed (CKR_SESSION_HANDLE_INVALID,
// CKR_SESSION_CLOSED: ckr.Closed) is only forgotten: its number may be
// another's already. Closing goes through CloseSession.
func (m *Module) Forget(s Session) bool {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	if s.H == 0 || m.sessions[s.H] != s.Serial {
		return false
	}
	delete(m.sessions, s.H)
	return true
}

// Open loads (once) and initializes (once) the PKCS#11 module at path
// and takes a reference on it. path must be absolute; symlinks are
// resolved, so two spellings of one library share a module.
func Open(path string) (*Module, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: no module path configured", ckr.ErrModule)
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: module path %q is not absolute", ckr.ErrModule, path)
	}
	// pkcs11.New returns nil without a reason (no dlerror), so find the
	// common reasons first.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ckr.ErrModule, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%w: module path %q is a directory", ckr.ErrModule, path)
	}
	// The library runs inside this process, which may be root's CLI: only
	// one that root or this user alone can change is loaded, and it is
	// loaded by the resolved path that was judged.
	resolved, err := safepath.Module(os.Geteuid()).File(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ckr.ErrModule, err)
	}

	modules.Lock()
	defer modules.Unlock()
	m := modules.byPath[resolved]
	if m == nil {
		ctx := pkcs11.New(resolved)
		if ctx == nil {
			return nil, fmt.Errorf("%w: cannot load %q (not a shared library exporting C_GetFunctionList?)", ckr.ErrModule, resolved)
		}
		m = &Module{Path: resolved, Lib: ctx}
		modules.byPath[resolved] = m
	}
	m.Mu.Lock()
	err = m.initializeLocked()
	m.Mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ckr.ErrModule, resolved, err)
	}
	m.refs++
	return m, nil
}

// initializeLocked calls C_Initialize (with CKF_OS_LOCKING_OK, miekg's
// default: without it SoftHSM2 turns its own locking off) unless the module
// is initialized. The caller holds m.Mu.
func (m *Module) initializeLocked() error {
	if m.Initialized {
		return nil
	}
	err := m.Lib.Initialize()
	if err != nil && ckr.RV(err) != pkcs11.CKR_CRYPTOKI_ALREADY_INITIALIZED {
		return ckr.Wrap("C_Initialize", err)
	}
	m.Initialized = true
	return nil
}

// finalizeLocked calls C_Finalize and starts a new epoch. The caller holds
// m.Mu, so no Token is inside a call.
func (m *Module) finalizeLocked() error {
	if !m.Initialized {
		return nil
	}
	err := m.Lib.Finalize()
	m.Initialized = false
	m.Epoch++
	m.sessMu.Lock()
	clear(m.sessions)
	m.sessMu.Unlock()
	return ckr.Wrap("C_Finalize", err)
}

// Reinit finalizes and initializes the module again, as recovery from a
// device error, unless that already happened after epoch seen. It returns
// the C_Initialize error, if any.
func (m *Module) Reinit(seen uint64) error {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	if m.Initialized && m.Epoch == seen {
		_ = m.finalizeLocked() // the device is failing: its answer says nothing
	}
	return m.initializeLocked()
}

// Release drops a reference; the last one finalizes the module. The
// library stays loaded: dlclose of PKCS#11 modules has crashed in the field
// (SoftHSM2 destructors), and a later Open reuses it.
func (m *Module) Release() error {
	modules.Lock()
	defer modules.Unlock()
	m.refs--
	if m.refs > 0 {
		return nil
	}
	m.Mu.Lock()
	defer m.Mu.Unlock()
	err := m.finalizeLocked()
	if err != nil && !errors.Is(err, pkcs11.Error(pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED)) {
		return err
	}
	return nil
}

// Refs returns the number of open Tokens using m.
func (m *Module) Refs() int {
	modules.Lock()
	defer modules.Unlock()
	return m.refs
}

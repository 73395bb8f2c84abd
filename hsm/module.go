package hsm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
)

// modules is the package's only package-level state: the PKCS#11 modules
// loaded so far, keyed by resolved path.
//
// It exists because C_Initialize and C_Finalize act on the whole process,
// not on a handle: a second C_Initialize fails with
// CKR_CRYPTOKI_ALREADY_INITIALIZED, and a C_Finalize by one user closes the
// sessions of every other. So all Tokens on one module share one *pkcs11.Ctx
// and one initialization, counted by references, and a re-initialization
// during recovery is ordered against every Token's calls (module.mu).
// Modules are never unloaded (no dlclose; see Token.Close).
var modules = struct {
	sync.Mutex
	byPath map[string]*module
}{byPath: make(map[string]*module)}

// module is one loaded PKCS#11 library.
type module struct {
	path string // resolved absolute path
	lib  p11    // the *pkcs11.Ctx; never Destroy()ed

	// refs counts the open Tokens using the module; guarded by modules.
	refs int

	// mu orders PKCS#11 calls against C_Finalize: Tokens hold mu.RLock
	// while they call into the module, reinit and release hold mu.Lock.
	mu sync.RWMutex
	// epoch is bumped by every C_Finalize. Sessions and object handles
	// obtained in an earlier epoch are void (and their numbers may have
	// been handed out again), so a Token compares it before every call.
	epoch       uint64
	initialized bool

	// sessMu guards sessions and serial: every session number the module
	// handed out in this epoch and still counts as open, with the serial
	// of the C_OpenSession that returned it (see session).
	sessMu   sync.RWMutex // ours, on every operation, takes the read lock
	sessions map[pkcs11.SessionHandle]uint64
	serial   uint64

	// copyMu keeps finds away from a key's copy in the making: the
	// freeze test (Token.copies) holds the write lock from C_CopyObject
	// to C_DestroyObject, every find (Token.find) the read lock. A
	// session object is visible to every session of the process, and a
	// copy does not get its template at once: SoftHSM2 makes the copy
	// with all of the key's attributes (CKA_TOKEN true, the key's
	// CKA_ID), then applies the template, so a find in between meets
	// two keys with one ID (ErrAmbiguousKey). Other processes never see
	// our session objects.
	copyMu sync.RWMutex
}

// session is a session handle together with the serial of the
// C_OpenSession that returned it. opencryptoki and tpm2-pkcs11 hand the
// number of a closed session out again with the next C_OpenSession
// (SoftHSM2 never does), so a number that still answers
// C_GetSessionInfo proves nothing: it may be another session now, even
// this Token's own persistent one. A session is ours only while the
// module registry still maps its number to its serial (module.ours).
type session struct {
	h      pkcs11.SessionHandle
	serial uint64
}

// opened records h, just returned by C_OpenSession. A session that
// carried the number before is closed (the module would not reuse an
// open number), whoever still holds it.
func (m *module) opened(h pkcs11.SessionHandle) session {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[pkcs11.SessionHandle]uint64)
	}
	m.serial++
	m.sessions[h] = m.serial
	return session{h: h, serial: m.serial}
}

// ours reports whether s's number still stands for s: no C_OpenSession
// returned the number again since, and nobody closed it through this
// package.
func (m *module) ours(s session) bool {
	if s.h == 0 {
		return false
	}
	m.sessMu.RLock()
	defer m.sessMu.RUnlock()
	return m.sessions[s.h] == s.serial
}

// forget drops s from the registry and reports whether it was still
// ours: only then may C_CloseSession be called on its number.
func (m *module) forget(s session) bool {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	if s.h == 0 || m.sessions[s.h] != s.serial {
		return false
	}
	delete(m.sessions, s.h)
	return true
}

// openModule loads (once) and initializes (once) the PKCS#11 module at path
// and takes a reference on it. path must be absolute; symlinks are
// resolved, so two spellings of one library share a module.
func openModule(path string) (*module, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: no module path configured", ErrModule)
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: module path %q is not absolute", ErrModule, path)
	}
	// pkcs11.New returns nil without a reason (no dlerror), so find the
	// common reasons first.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModule, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%w: module path %q is a directory", ErrModule, path)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModule, err)
	}

	modules.Lock()
	defer modules.Unlock()
	m := modules.byPath[resolved]
	if m == nil {
		ctx := pkcs11.New(resolved)
		if ctx == nil {
			return nil, fmt.Errorf("%w: cannot load %q (not a shared library exporting C_GetFunctionList?)", ErrModule, resolved)
		}
		m = &module{path: resolved, lib: ctx}
		modules.byPath[resolved] = m
	}
	m.mu.Lock()
	err = m.initializeLocked()
	m.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrModule, resolved, err)
	}
	m.refs++
	return m, nil
}

// initializeLocked calls C_Initialize (with CKF_OS_LOCKING_OK, miekg's
// default: without it SoftHSM2 turns its own locking off) unless the module
// is initialized. The caller holds m.mu.
func (m *module) initializeLocked() error {
	if m.initialized {
		return nil
	}
	err := m.lib.Initialize()
	if err != nil && ckr.RV(err) != pkcs11.CKR_CRYPTOKI_ALREADY_INITIALIZED {
		return ckr.Wrap("C_Initialize", err)
	}
	m.initialized = true
	return nil
}

// finalizeLocked calls C_Finalize and starts a new epoch. The caller holds
// m.mu, so no Token is inside a call.
func (m *module) finalizeLocked() error {
	if !m.initialized {
		return nil
	}
	err := m.lib.Finalize()
	m.initialized = false
	m.epoch++
	m.sessMu.Lock()
	clear(m.sessions)
	m.sessMu.Unlock()
	return ckr.Wrap("C_Finalize", err)
}

// reinit finalizes and initializes the module again, as recovery from a
// device error, unless that already happened after epoch seen. It returns
// the C_Initialize error, if any.
func (m *module) reinit(seen uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.initialized && m.epoch == seen {
		_ = m.finalizeLocked() // the device is failing: its answer says nothing
	}
	return m.initializeLocked()
}

// release drops a reference; the last one finalizes the module. The
// library stays loaded: dlclose of PKCS#11 modules has crashed in the field
// (SoftHSM2 destructors), and a later openModule reuses it.
func (m *module) release() error {
	modules.Lock()
	defer modules.Unlock()
	m.refs--
	if m.refs > 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.finalizeLocked()
	if err != nil && !errors.Is(err, pkcs11.Error(pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED)) {
		return err
	}
	return nil
}

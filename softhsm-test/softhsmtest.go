package softhsmtest

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/miekg/pkcs11"
)

// confTemplate is softhsm2.conf.tmpl; writeConf fills in @TOKENDIR@.
//
//go:embed softhsm2.conf.tmpl
var confTemplate []byte

// DefaultModule is where Debian and Ubuntu install the SoftHSM2 module.
const DefaultModule = "/usr/lib/softhsm/libsofthsm2.so"

// Token describes a SoftHSM2 token created by Setup, or an existing token
// of any module handed to the tests through the environment (FromEnv).
type Token struct {
	Dir    string // directory holding softhsm2.conf and tokens/ (SoftHSM2 only)
	Conf   string // absolute path of softhsm2.conf (SoftHSM2 only)
	Label  string // token label
	PIN    string // user PIN
	SOPIN  string // security officer PIN (SoftHSM2 only)
	Module string // absolute path of the PKCS#11 module

	// External is true for a token the harness did not make (FromEnv):
	// its PIN rules, slots, mechanisms and attribute handling are the
	// module's own, and a test that needs what it lacks may skip, saying
	// what; on the harness's own SoftHSM2 token nothing is skipped.
	External bool

	spares *spareList // External: the module's spare tokens
}

// Module returns the SoftHSM2 module path: $SIGND_TEST_PKCS11_MODULE when
// set without SIGND_TEST_PKCS11_LABEL (which makes it another module's),
// else DefaultModule. It fails with an install hint when the file is
// missing.
func Module() (string, error) {
	m := os.Getenv(EnvModule)
	if m == "" || os.Getenv(EnvLabel) != "" {
		m = DefaultModule
	}
	if _, err := os.Stat(m); err != nil {
		return "", fmt.Errorf("softhsmtest: PKCS#11 module %s: %w (install it with: apt-get install softhsm2)", m, err)
	}
	return m, nil
}

// Setup creates a token labelled label inside dir with random PINs, and
// points SOFTHSM2_CONF of the current process at its config.
func Setup(dir, label string) (*Token, error) {
	tok, err := Create(dir, label, randomPIN(), randomPIN())
	if err != nil {
		return nil, err
	}
	if err := os.Setenv("SOFTHSM2_CONF", tok.Conf); err != nil {
		return nil, err
	}
	return tok, nil
}

// Create makes sure a token labelled label exists inside dir: it writes
// dir/softhsm2.conf (file backend, tokens in dir/tokens, from
// softhsm2.conf.tmpl) and, unless a token with that label is already
// there, initializes the first free slot with soPIN and userPIN. It talks
// PKCS#11 to the module in this process (C_InitToken, C_Login as SO,
// C_InitPIN), so the PINs are never on the command line of any process,
// where every local user could read them (/proc/PID/cmdline); softhsm2-util
// would need them there. The module must not be initialized elsewhere in
// the process; Create leaves it finalized and points SOFTHSM2_CONF at the
// config while it runs.
func Create(dir, label, userPIN, soPIN string) (*Token, error) {
	module, err := Module()
	if err != nil {
		return nil, err
	}
	tok := &Token{Dir: dir, Label: label, PIN: userPIN, SOPIN: soPIN, Module: module}
	return tok, tok.create()
}

// AddToken creates another token with the same config directory and returns
// it. SoftHSM2 only sees it after the module is initialized again. On an
// existing token (External) it makes nothing: it returns the next spare
// token of SIGND_TEST_PKCS11_SPARE_LABELS, whatever label asks for, or
// ErrNoSpareToken.
func (t *Token) AddToken(label string) (*Token, error) {
	if t.External {
		return t.addSpare()
	}
	nt := &Token{Dir: t.Dir, Label: label, PIN: randomPIN(), SOPIN: randomPIN(), Module: t.Module}
	return nt, nt.create()
}

// maxLabel is the size of CK_TOKEN_INFO.label.
const maxLabel = 32

// minPIN is SoftHSM2's shortest PIN.
const minPIN = 4

func (t *Token) create() error {
	switch {
	case t.Label == "":
		return errors.New("softhsmtest: empty token label")
	case len(t.Label) > maxLabel:
		return fmt.Errorf("softhsmtest: token label %q is longer than %d bytes", t.Label, maxLabel)
	case len(t.PIN) < minPIN || len(t.SOPIN) < minPIN:
		return fmt.Errorf("softhsmtest: PINs must be at least %d characters", minPIN)
	}
	if err := t.writeConf(); err != nil {
		return err
	}
	// SoftHSM2 reads SOFTHSM2_CONF in C_Initialize.
	prev, had := os.LookupEnv("SOFTHSM2_CONF")
	if err := os.Setenv("SOFTHSM2_CONF", t.Conf); err != nil {
		return err
	}
	defer func() {
		if had {
			_ = os.Setenv("SOFTHSM2_CONF", prev)
		} else {
			_ = os.Unsetenv("SOFTHSM2_CONF")
		}
	}()
	return t.initToken()
}

// writeConf writes Dir/softhsm2.conf (0600) and creates Dir/tokens (0700).
func (t *Token) writeConf() error {
	dir, err := filepath.Abs(t.Dir)
	if err != nil {
		return fmt.Errorf("softhsmtest: %w", err)
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.MkdirAll(tokens, 0o700); err != nil {
		return fmt.Errorf("softhsmtest: %w", err)
	}
	if err := os.Chmod(tokens, 0o700); err != nil {
		return fmt.Errorf("softhsmtest: %w", err)
	}
	conf := filepath.Join(dir, "softhsm2.conf")
	if err := os.WriteFile(conf, bytes.ReplaceAll(confTemplate, []byte("@TOKENDIR@"), []byte(tokens)), 0o600); err != nil {
		return fmt.Errorf("softhsmtest: %w", err)
	}
	t.Dir, t.Conf = dir, conf
	return nil
}

// initToken initializes a free slot as the token, unless it exists.
func (t *Token) initToken() error {
	return InitToken(t.Module, nil, t.Label, t.PIN, t.SOPIN)
}

// InitToken makes sure module has an initialized token labelled label:
// when one is there already it is reused as it is; otherwise the slot
// numbered *slot (nil: the first slot holding an uninitialized token) is
// initialized with soPIN (C_InitToken; a token that has never been
// initialized takes its vendor's default SO PIN here, opencryptoki's
// 87654321) and gets userPIN as its user PIN (C_Login as SO, C_InitPIN).
// The PINs travel through PKCS#11 calls in this process only. The module
// must not be initialized elsewhere in the process; InitToken leaves it
// finalized.
func InitToken(module string, slot *uint, label, userPIN, soPIN string) error {
	// The module is never unloaded (no Destroy): the hsm package keeps its
	// own handle to the same library, and SoftHSM2 is not meant to be
	// dlclose()d and loaded again.
	ctx := pkcs11.New(module)
	if ctx == nil {
		return fmt.Errorf("softhsmtest: cannot load the PKCS#11 module %s", module)
	}
	if err := ctx.Initialize(); err != nil {
		return fmt.Errorf("softhsmtest: C_Initialize: %w (create tokens before anything in this process opens the module)", err)
	}
	defer ctx.Finalize()
	slots, err := ctx.GetSlotList(true)
	if err != nil {
		return fmt.Errorf("softhsmtest: C_GetSlotList: %w", err)
	}
	free, found := uint(0), false
	for _, s := range slots {
		info, err := ctx.GetTokenInfo(s)
		if err != nil {
			return fmt.Errorf("softhsmtest: C_GetTokenInfo: %w", err)
		}
		initialized := info.Flags&pkcs11.CKF_TOKEN_INITIALIZED != 0
		if initialized && strings.TrimRight(info.Label, " ") == label {
			return nil // made by an earlier run: reuse it as it is
		}
		if !initialized && !found && (slot == nil || *slot == s) {
			free, found = s, true
		}
	}
	switch {
	case !found && slot != nil:
		return fmt.Errorf("softhsmtest: slot %d of %s holds no uninitialized token for %q", *slot, module, label)
	case !found:
		return fmt.Errorf("softhsmtest: no free slot for token %q in %s", label, module)
	}
	if err := ctx.InitToken(free, soPIN, label); err != nil {
		return fmt.Errorf("softhsmtest: C_InitToken %q: %w", label, err)
	}
	s, err := ctx.OpenSession(free, pkcs11.CKF_SERIAL_SESSION|pkcs11.CKF_RW_SESSION)
	if err != nil {
		return fmt.Errorf("softhsmtest: C_OpenSession: %w", err)
	}
	defer ctx.CloseSession(s)
	if err := ctx.Login(s, pkcs11.CKU_SO, soPIN); err != nil {
		return fmt.Errorf("softhsmtest: C_Login as SO: %w", err)
	}
	if err := ctx.InitPIN(s, userPIN); err != nil {
		return fmt.Errorf("softhsmtest: C_InitPIN: %w", err)
	}
	if err := ctx.Logout(s); err != nil {
		return fmt.Errorf("softhsmtest: C_Logout: %w", err)
	}
	return nil
}

// Script returns the absolute path of init-token.sh, the shell entry to
// Create for the demo and the benchmarks.
func Script() (string, error) {
	return filepath.Join(sourceDir(), "init-token.sh"), nil
}

// sourceDir is the directory of this package's sources, which holds
// init-token.sh.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func randomPIN() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

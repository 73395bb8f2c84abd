package softhsmtest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultModule is where Debian and Ubuntu install the SoftHSM2 module.
const DefaultModule = "/usr/lib/softhsm/libsofthsm2.so"

// Token describes a SoftHSM2 token created by Setup.
type Token struct {
	Dir    string // directory holding softhsm2.conf and tokens/
	Conf   string // absolute path of softhsm2.conf
	Label  string // token label
	PIN    string // user PIN
	SOPIN  string // security officer PIN
	Module string // absolute path of libsofthsm2.so
}

// Module returns the SoftHSM2 module path: $SIGND_TEST_PKCS11_MODULE when
// set, else DefaultModule. It fails with an install hint when the file is
// missing.
func Module() (string, error) {
	m := os.Getenv("SIGND_TEST_PKCS11_MODULE")
	if m == "" {
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
	module, err := Module()
	if err != nil {
		return nil, err
	}
	tok := &Token{Dir: dir, Label: label, PIN: randomPIN(), SOPIN: randomPIN(), Module: module}
	if err := tok.create(); err != nil {
		return nil, err
	}
	if err := os.Setenv("SOFTHSM2_CONF", tok.Conf); err != nil {
		return nil, err
	}
	return tok, nil
}

// AddToken creates another token with the same config directory and returns
// it. SoftHSM2 only sees it after the module is initialized again.
func (t *Token) AddToken(label string) (*Token, error) {
	nt := &Token{Dir: t.Dir, Label: label, PIN: randomPIN(), SOPIN: randomPIN(), Module: t.Module}
	return nt, nt.create()
}

func (t *Token) create() error {
	script, err := Script()
	if err != nil {
		return err
	}
	cmd := exec.Command("bash", script, t.Dir, t.Label)
	cmd.Env = append(os.Environ(), "SOFTHSM_USER_PIN="+t.PIN, "SOFTHSM_SO_PIN="+t.SOPIN)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("softhsmtest: init-token.sh %s: %v: %s", t.Label, err, strings.TrimSpace(string(ee.Stderr)))
		}
		return fmt.Errorf("softhsmtest: init-token.sh %s: %w", t.Label, err)
	}
	line := strings.TrimSpace(string(out))
	conf, ok := strings.CutPrefix(line, "SOFTHSM2_CONF=")
	if !ok {
		return fmt.Errorf("softhsmtest: unexpected output of init-token.sh: %q", line)
	}
	t.Conf = conf
	return nil
}

// Script returns the absolute path of init-token.sh.
func Script() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("softhsmtest: cannot locate init-token.sh")
	}
	return filepath.Join(filepath.Dir(file), "init-token.sh"), nil
}

func randomPIN() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

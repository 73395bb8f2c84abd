package softhsmtest

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The variables that hand the tests an existing token of any PKCS#11
// module instead of a SoftHSM2 token made for the run (softhsm-test/
// opencryptoki.sh and tpm2.sh write them).
const (
	EnvModule = "SIGND_TEST_PKCS11_MODULE" // the module; alone, it only moves SoftHSM2
	EnvLabel  = "SIGND_TEST_PKCS11_LABEL"  // the token's label: set, the token is used as it is
	EnvPIN    = "SIGND_TEST_PKCS11_PIN"    // its user PIN
	// EnvSpareLabels lists, space-separated, more tokens of the same
	// module with the same user PIN, for tests that need a token of their
	// own (AddToken hands them out in order).
	EnvSpareLabels = "SIGND_TEST_PKCS11_SPARE_LABELS"
)

// ErrNoSpareToken is AddToken on an existing token whose module has no
// spare token left in SIGND_TEST_PKCS11_SPARE_LABELS.
var ErrNoSpareToken = errors.New("softhsmtest: no spare token (set " + EnvSpareLabels + ")")

// ErrExternal is what an operation that only works on the harness's own
// SoftHSM2 token returns for an existing token (Remove).
var ErrExternal = errors.New("softhsmtest: not possible on an existing token, only on the SoftHSM2 token the harness made")

// FromEnv returns the existing token SIGND_TEST_PKCS11_LABEL names, or
// nil when it is unset (the tests then make a SoftHSM2 token). The module
// and the PIN must be set with it; the module is not loaded here.
func FromEnv() (*Token, error) {
	label := os.Getenv(EnvLabel)
	if label == "" {
		return nil, nil
	}
	module, pin := os.Getenv(EnvModule), os.Getenv(EnvPIN)
	if module == "" || pin == "" {
		return nil, fmt.Errorf("softhsmtest: %s is set, so %s and %s must be too", EnvLabel, EnvModule, EnvPIN)
	}
	if _, err := os.Stat(module); err != nil {
		return nil, fmt.Errorf("softhsmtest: PKCS#11 module %s: %w", module, err)
	}
	return &Token{
		Label: label, PIN: pin, Module: module, External: true,
		spares: &spareList{labels: strings.Fields(os.Getenv(EnvSpareLabels))},
	}, nil
}

// spareList hands out the spare tokens of an existing token's module once
// each.
type spareList struct{ labels []string }

func (t *Token) addSpare() (*Token, error) {
	if t.spares == nil || len(t.spares.labels) == 0 {
		return nil, ErrNoSpareToken
	}
	label := t.spares.labels[0]
	t.spares.labels = t.spares.labels[1:]
	return &Token{Label: label, PIN: t.PIN, Module: t.Module, External: true, spares: t.spares}, nil
}

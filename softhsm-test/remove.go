package softhsmtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ObjectDir returns the directory under tokens/ that holds this token's
// objects (SoftHSM2's file backend names it by a UUID). It is found by the
// label stored in token.object: 32 bytes, padded with spaces (PKCS#11
// CK_TOKEN_INFO.label).
func (t *Token) ObjectDir() (string, error) {
	if t.External {
		return "", ErrExternal
	}
	if len(t.Label) > 32 {
		return "", fmt.Errorf("softhsmtest: label %q longer than 32 bytes", t.Label)
	}
	padded := []byte(t.Label + strings.Repeat(" ", 32-len(t.Label)))
	dirs, err := filepath.Glob(filepath.Join(t.Dir, "tokens", "*", "token.object"))
	if err != nil {
		return "", err
	}
	var found []string
	for _, f := range dirs {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if bytes.Contains(data, padded) {
			found = append(found, filepath.Dir(f))
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("softhsmtest: %d token directories labelled %q under %s", len(found), t.Label, filepath.Join(t.Dir, "tokens"))
	}
	return found[0], nil
}

// Remove makes the token vanish the way an unplugged or failed HSM does:
// it moves the token's object directory out of the token directory. It
// returns restore, which moves it back (idempotent).
//
// What SoftHSM2 2.6.1 does meanwhile, measured: cached object handles
// answer CKR_OBJECT_HANDLE_INVALID, C_FindObjects finds nothing (no
// error), C_GetTokenInfo answers CKR_GENERAL_ERROR, while C_GetSlotList,
// C_OpenSession, C_Login (CKR_USER_ALREADY_LOGGED_IN) and
// C_GetSessionInfo still succeed. Moving the directory back does not
// revive the token in a running process: it stays broken until C_Finalize
// and C_Initialize, and after those it is listed again only if its
// directory is back. On an existing token (External) it returns
// ErrExternal.
func (t *Token) Remove() (restore func() error, err error) {
	dir, err := t.ObjectDir()
	if err != nil {
		return nil, err
	}
	away := filepath.Join(t.Dir, "removed-"+filepath.Base(dir))
	if err := os.Rename(dir, away); err != nil {
		return nil, fmt.Errorf("softhsmtest: remove token %q: %w", t.Label, err)
	}
	return func() error {
		err := os.Rename(away, dir)
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(dir); serr == nil {
				return nil // restored before
			}
		}
		if err != nil {
			return fmt.Errorf("softhsmtest: restore token %q: %w", t.Label, err)
		}
		return nil
	}, nil
}

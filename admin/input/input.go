// Package input holds the limits of what operators type into signd's
// administration (package admin) — the lengths of passwords, PINs, names
// and identity attributes — and the test for printable text, which the
// principals (certificate entries of admin.api_roles), the operations'
// request checks (admin/ops) and admin's acts all apply. It imports
// nothing.
package input

// Input limits. Passwords and PINs are counted in bytes.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
	MinPINLen      = 4
	MaxPINLen      = 64
	// MaxNameLen is the longest name an operator may give, in bytes.
	MaxNameLen = 200
	// MaxClaimLen is the longest identity attribute value, in bytes.
	MaxClaimLen = 256
)

// Printable reports whether s holds no control characters and no
// replacement character (invalid UTF-8).
func Printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return false
		}
	}
	return true
}

// Package input holds the limits and checks of what operators type into
// signd's administration (package admin) that more than one of its parts
// applies: names (users, clients, certificate entries of admin.api_roles)
// and printable text. It imports nothing of admin.
package input

// MaxNameLen is the longest name an operator may give, in bytes.
const MaxNameLen = 200

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

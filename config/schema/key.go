package schema

import "strings"

// EnvPrefix is prepended to a key's name to form its environment variable:
// server.base_url is read from SIGND_SERVER_BASE_URL.
const EnvPrefix = "SIGND_"

// Key describes one configuration key. config.Keys returns the full table; it is the
// single source of defaults, environment variables, flags and help text.
type Key struct {
	// Name is the dotted key as written in the file, e.g. "server.listen".
	Name string
	// Default is the value used when no source sets the key. Its Go type is
	// the key's type (string, int, int64, float64, bool, time.Duration, Secret,
	// []string).
	Default any
	// Required is true when the default is only a placeholder and the key
	// must be set by the file, the environment or a flag.
	Required bool
	// Flag is the command-line flag BindFlags registers, "" for none.
	Flag string
	// Usage is a one-line description, for --help and the comments of
	// `signd config example`.
	Usage string
	// Doc is the key's description in docs/CONFIG.md's table, where Usage
	// is too short: markdown on one line (no "|"), empty = Usage. The
	// default and the flag are not repeated in it: the table takes them
	// from Default and Flag. `go generate ./config` writes the table.
	Doc string
	// Reload is true for the few keys a SIGHUP reload puts in force in
	// the running daemon (cmd/signd/reload). Every other key is read at
	// start only: a reload that changes one is refused, naming it, and
	// changes nothing. docs/CONFIG.md's table shows it.
	Reload bool
}

// Env returns the environment variable that sets the key, e.g.
// SIGND_PKCS11_TOKEN_LABEL for pkcs11.token_label.
func (k Key) Env() string {
	return EnvName(k.Name)
}

// EnvName returns the environment variable for a dotted key name.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
}

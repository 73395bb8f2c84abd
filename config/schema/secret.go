package schema

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
)

// redacted is what a non-empty Secret prints as, everywhere.
const redacted = "[REDACTED]"

// Secret holds a sensitive value such as the token PIN. It redacts itself in
// every printout: fmt (all verbs, including %#v and inside structs), slog,
// encoding/json and anything that uses encoding.TextMarshaler. An empty
// Secret prints as "" so that "not set" stays visible.
//
// Reveal is the only way to read the value; call it at the point of use
// (hsm login) and nowhere else.
//
// Limits of a string type: string(s) also yields the value, code that walks
// values with reflect (some pretty-printers) sees it, and encoding/json
// writes a string-kinded map key as is, so never use a Secret as a map key.
type Secret string

// String returns "[REDACTED]", or "" when the secret is empty.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString makes %#v print config.Secret("[REDACTED]").
func (s Secret) GoString() string {
	return fmt.Sprintf("config.Secret(%q)", s.String())
}

// Format implements fmt.Formatter so that every verb and flag (%s %v %+v %#v
// %q %x %X %10s ...) is applied to the placeholder, never to the value.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value {
	return slog.StringValue(s.String())
}

// MarshalText implements encoding.TextMarshaler (used by YAML encoders and
// slog's text handler).
func (s Secret) MarshalText() ([]byte, error) {
	return []byte(s.String()), nil
}

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) {
	return json.Marshal(s.String())
}

// Reveal returns the secret value. It is the only way to get it.
func (s Secret) Reveal() string {
	return string(s)
}

package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AuditConfig is the audit.* section: the audit key in the token and the
// signed checkpoints of the audit log (package checkpoint).
type AuditConfig struct {
	// KeyLabel is the CKA_LABEL of the audit signing key (`signd audit
	// key create` makes it; checkpoints find it by this label).
	KeyLabel string `mapstructure:"key_label"`
	// CheckpointOrigin is the first line of every checkpoint and the
	// name of its signature ("" = derived from server.base_url:
	// DefaultCheckpointOrigin).
	CheckpointOrigin string `mapstructure:"checkpoint_origin"`
	// CheckpointDir receives every checkpoint (one file per size and the
	// latest); GET /audit/checkpoint serves the latest from there. ""
	// writes and serves none (audit.checkpoint_interval must then be 0).
	CheckpointDir string `mapstructure:"checkpoint_dir"`
	// CheckpointInterval is how often the daemon signs one; 0 = never
	// by itself (`signd audit checkpoint` still does).
	CheckpointInterval time.Duration `mapstructure:"checkpoint_interval"`
}

// Bounds of audit.* keys.
const (
	// MaxAuditKeyLabelLen bounds audit.key_label (the hsm package's
	// limit on key labels).
	MaxAuditKeyLabelLen = 128
	// MaxCheckpointOriginLen bounds audit.checkpoint_origin.
	MaxCheckpointOriginLen = 255
	// MinCheckpointInterval and MaxCheckpointInterval bound
	// audit.checkpoint_interval when it is not 0.
	MinCheckpointInterval = time.Minute
	MaxCheckpointInterval = 7 * 24 * time.Hour
)

func auditKeys() []Key {
	return []Key{
		{Name: "audit.key_label", Default: DefaultAuditKeyLabel,
			Usage: "CKA_LABEL of the audit signing key in the token (signd audit key create makes it; at most 128 bytes)",
			Doc:   "`CKA_LABEL` of the audit signing key in the token (`signd audit key create` makes it: Ed25519, or ECDSA P-256 on a token without EdDSA); checkpoints find it by this label (1–128 bytes)"},
		{Name: "audit.checkpoint_origin", Default: "",
			Usage: "origin line and signature name of the audit checkpoints; empty = host and path of server.base_url followed by /audit",
			Doc:   "first line of every audit checkpoint and the name in its signature line (C2SP tlog-checkpoint, signed-note): no space, `+` or control character, at most 255 bytes; empty = host and path of `server.base_url` followed by `/audit`"},
		{Name: "audit.checkpoint_dir", Default: "./var/checkpoints",
			Usage: "directory the signed audit checkpoints are written to (created 0750); GET /audit/checkpoint serves the latest; empty = none written or served",
			Doc:   "directory the signed audit checkpoints are written to (`checkpoint` = the latest, `checkpoint.<size>` = each one, `key` = the verifier key; created 0750); `GET /audit/checkpoint` and `/audit/checkpoint.key` serve them; empty = none written or served"},
		{Name: "audit.checkpoint_interval", Default: time.Duration(0),
			Usage: "how often the daemon signs an audit checkpoint (1m to 168h); 0 = only on demand (signd audit checkpoint)",
			Doc:   "how often the daemon signs an audit checkpoint, skipped when nothing but its own last checkpoint entry was added (1m–168h); `0` = only `signd audit checkpoint`. See [Audit checkpoints](DESIGN-NOTES.md#audit-checkpoints-signed-in-the-hsm)"},
	}
}

func (a *AuditConfig) checks() []check {
	return []check{
		{"audit.key_label", auditKeyLabel(a.KeyLabel)},
		{"audit.checkpoint_origin", checkpointOrigin(a.CheckpointOrigin)},
		{"audit.checkpoint_interval", checkpointInterval(a.CheckpointInterval, a.CheckpointDir)},
	}
}

// Origin returns audit.checkpoint_origin, or the one derived from baseURL
// (server.base_url) when it is empty: DefaultCheckpointOrigin.
func (a AuditConfig) Origin(baseURL string) string {
	if a.CheckpointOrigin != "" {
		return a.CheckpointOrigin
	}
	return DefaultCheckpointOrigin(baseURL)
}

// DefaultCheckpointOrigin derives a checkpoint origin from a base URL,
// as C2SP tlog-checkpoint recommends (a schema-less URL): host, port and
// path, then "/audit" ("https://sign.example.com/x" →
// "sign.example.com/x/audit"). Characters a signed-note key name may not
// hold (spaces, "+") are dropped.
func DefaultCheckpointOrigin(baseURL string) string {
	host, path := "signd", ""
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		host, path = u.Host, strings.TrimRight(u.EscapedPath(), "/")
	}
	return strings.Map(func(r rune) rune {
		if r == '+' || unicode.IsSpace(r) || r < 0x20 {
			return -1
		}
		return r
	}, host+path+"/audit")
}

// auditKeyLabel accepts a key label; "" (a Config built in code) is the
// default.
func auditKeyLabel(l string) string {
	switch {
	case len(l) > MaxAuditKeyLabelLen:
		return fmt.Sprintf("is %d bytes; at most %d", len(l), MaxAuditKeyLabelLen)
	case !utf8.ValidString(l) || strings.ContainsFunc(l, unicode.IsControl):
		return fmt.Sprintf("%q holds a control character or invalid UTF-8", l)
	}
	return ""
}

// checkpointOrigin accepts "" (derived) or what C2SP signed-note allows
// as a key name: non-empty, no Unicode space, no "+", no control
// character; at most 255 bytes of UTF-8.
func checkpointOrigin(o string) string {
	switch {
	case o == "":
		return ""
	case len(o) > MaxCheckpointOriginLen:
		return fmt.Sprintf("is %d bytes; at most %d", len(o), MaxCheckpointOriginLen)
	case !utf8.ValidString(o) || strings.ContainsFunc(o, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '+' }):
		return fmt.Sprintf("%q must hold no space, no \"+\" and no control character (a C2SP signed-note key name; e.g. sign.example.com/audit)", o)
	}
	return ""
}

func checkpointInterval(d time.Duration, dir string) string {
	switch {
	case d != 0 && (d < MinCheckpointInterval || d > MaxCheckpointInterval):
		return fmt.Sprintf("must be 0 (only on demand) or between %v and %v, got %v", MinCheckpointInterval, MaxCheckpointInterval, d)
	case d != 0 && dir == "":
		return "needs audit.checkpoint_dir: the checkpoints are written there"
	}
	return ""
}

// DefaultAuditKeyLabel is audit.key_label's default.
const DefaultAuditKeyLabel = "signd-audit"

// Label returns audit.key_label, DefaultAuditKeyLabel when it is empty (a
// Config built in code rather than loaded).
func (a AuditConfig) Label() string {
	if a.KeyLabel == "" {
		return DefaultAuditKeyLabel
	}
	return a.KeyLabel
}

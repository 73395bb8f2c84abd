package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/signd/signd/config/schema"
)

// DualControlConfig is admin.dual_control and admin.pending_ttl, part of
// the admin.* section (AdminConfig).
type DualControlConfig struct {
	// DualControl names the acts (DualControlActs) that a second operator
	// must approve: the first operator's request waits as a pending
	// request (signd pending approve|reject ID). Empty: none, so a
	// single-operator installation works as it is.
	DualControl []string `mapstructure:"dual_control"`
	// PendingTTL is how long a pending request waits for its approval
	// before it expires.
	PendingTTL time.Duration `mapstructure:"pending_ttl"`
}

// Bounds of admin.pending_ttl.
const (
	MinPendingTTL = 5 * time.Minute
	MaxPendingTTL = 7 * 24 * time.Hour
)

// DualControlAct is an administrative act admin.dual_control may name.
type DualControlAct struct {
	// Name is the act as admin.dual_control spells it, after the CLI
	// command: credential_remove for `signd credential remove`.
	Name string
	// Op is the admin operation performing it (admin.Operations).
	Op string
	// Refused says why the act cannot wait for a second operator, "" when
	// it can: a pending request is stored until approved and shown to
	// the approver, and the act's answer goes to the approver, so neither
	// may carry a secret (admin.Holdable says the same).
	Refused string
}

// DualControlActs is every act that changes something, in the order of
// the CLI. Roles are configuration, not an act: a change of roles is a
// change of the configuration file, read when the daemon starts (a
// reload that changes them is refused).
func DualControlActs() []DualControlAct {
	return []DualControlAct{
		{"user_add", "AddUser", "its request carries the password and the PIN"},
		{"user_status", "SetUserStatus", ""},
		{"user_unlock", "UnlockUser", ""},
		{"user_unlock_pin", "UnlockPIN", ""},
		{"user_set_password", "SetPassword", "its request carries the new password"},
		{"user_set_pin", "SetPIN", "its request carries the new PIN"},
		{"user_add_proof", "AddProof", "its request carries an identity document"},
		{"user_remove", "RemoveUser", ""},
		{"user_enroll_link", "IssueEnrollment", "its answer carries the enrollment link"},
		{"totp_enroll", "EnrollTOTP", "its answer carries the TOTP secret"},
		{"totp_remove", "RemoveTOTP", ""},
		{"client_add", "AddClient", "its request or its answer carries the client secret"},
		{"client_remove", "RemoveClient", ""},
		{"credential_create", "CreateCredential", ""},
		{"credential_import_cert", "ImportCertificate", ""},
		{"credential_status", "SetCredentialStatus", ""},
		{"credential_set_auth", "SetCredentialAuth", ""},
		{"credential_remove", "RemoveCredential", ""},
		{"oidc_keys_create", "CreateOIDCKey", ""},
		{"oidc_keys_rotate", "RotateOIDCKeys", ""},
		{"tsa_enroll", "EnrollTSA", ""},
		{"tsa_import_cert", "ImportTSACertificate", ""},
		{"audit_key_create", "CreateAuditKey", ""},
		{"audit_checkpoint", "AuditCheckpoint", ""},
	}
}

// DualControlOps returns the admin operations of admin.dual_control, in
// its order (names Validate refuses are left out).
func (a DualControlConfig) DualControlOps() []string {
	var ops []string
	for _, name := range a.DualControl {
		if i := slices.IndexFunc(DualControlActs(), func(d DualControlAct) bool { return d.Name == name }); i >= 0 {
			ops = append(ops, DualControlActs()[i].Op)
		}
	}
	return ops
}

func dualControlKeys() []Key {
	return []Key{
		{Name: "admin.dual_control", Default: []string(nil),
			Usage: "acts a second operator must approve (dual control), e.g. [credential_remove, tsa_enroll, oidc_keys_rotate]; empty = none",
			Doc: "administrative acts a second operator must approve (dual control, see [signd pending](CLI.md#dual-control-signd-pending)): the first operator's command answers `pending request ID: … needs approval by a second operator`, and another operator (another uid) runs `signd pending approve ID`. Acts: " +
				dualControlDoc() + ". Empty, so that one operator can run signd; with two operators, name at least the acts that cannot be undone: `[credential_remove, tsa_enroll, oidc_keys_rotate]`. Roles are not an act: `admin.roles` is configuration. In the environment: comma-separated"},
		{Name: "admin.pending_ttl", Default: 24 * time.Hour,
			Usage: fmt.Sprintf("how long an act under dual control waits for its approval (%v to %v)", MinPendingTTL, MaxPendingTTL),
			Doc:   "how long a pending request waits for its approval; then it expires (refused at approval, removed by the sweeper, audited as `pending_expired`) (5m–168h)"},
	}
}

// dualControlDoc lists the acts for docs/CONFIG.md: those that can wait,
// then those refused and why.
func dualControlDoc() string {
	var can, cannot []string
	for _, a := range DualControlActs() {
		if a.Refused == "" {
			can = append(can, "`"+a.Name+"`")
		} else {
			cannot = append(cannot, fmt.Sprintf("`%s` (%s)", a.Name, a.Refused))
		}
	}
	return strings.Join(can, ", ") + ". Refused, because a pending request and the act's answer must hold no secret: " + strings.Join(cannot, ", ")
}

func (a *DualControlConfig) checks() []check {
	return []check{
		{"admin.dual_control", dualControl(a.DualControl)},
		{"admin.pending_ttl", within(a.PendingTTL, MinPendingTTL, MaxPendingTTL)},
	}
}

// dualControl checks admin.dual_control: known acts that can wait for a
// second operator, each named once.
func dualControl(names []string) string {
	acts := DualControlActs()
	var holdable []string
	for _, a := range acts {
		if a.Refused == "" {
			holdable = append(holdable, a.Name)
		}
	}
	var bad []string
	seen := map[string]bool{}
	for i, name := range names {
		j := slices.IndexFunc(acts, func(a DualControlAct) bool { return a.Name == name })
		switch {
		case j < 0:
			msg := fmt.Sprintf("entry %d: unknown act %q", i+1, name)
			if near := nearest(name, holdable); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			} else {
				msg += " (acts: " + strings.Join(holdable, ", ") + ")"
			}
			bad = append(bad, msg)
		case seen[name]:
			bad = append(bad, fmt.Sprintf("entry %d: %q is named twice", i+1, name))
		case acts[j].Refused != "":
			bad = append(bad, fmt.Sprintf("entry %d: %s cannot wait for a second operator: %s", i+1, name, acts[j].Refused))
		}
		seen[name] = true
	}
	return strings.Join(bad, "; ")
}

// nearest returns the name in known within an edit distance of 2 of s
// (ignoring case), or "".
func nearest(s string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := schema.EditDistance(strings.ToLower(s), k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

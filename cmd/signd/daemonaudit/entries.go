package daemonaudit

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/config"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// Config events (config_loaded Fields["event"]).
const (
	ConfigStart  = "start"
	ConfigReload = "reload"
)

// ConfigLoaded is the audit entry of cfg loaded at now, at start or
// on a reload: the file's path and the SHA-256 of the bytes parsed (none
// when the daemon runs on defaults, environment and flags alone), and who
// may administer it — the groups of each trusted role (admin.roles, or
// "unset" when every admin socket user holds every role) and the acts
// under dual control (admin.dual_control). The digest lets an auditor tell
// which file a daemon ran with; the other values are not copied.
func ConfigLoaded(cfg *config.Config, event string, now time.Time) *store.AuditEntry {
	e := &store.AuditEntry{Time: now, Kind: store.AuditConfigLoaded, Actor: admin.Daemon().Actor, Outcome: store.AuditOK,
		Fields: map[string]string{"event": event}}
	text := func(vs []string) string { return strings.ToValidUTF8(strings.Join(vs, ","), "\uFFFD") }
	if cfg.Admin.Roles.Configured() {
		for _, rg := range cfg.Admin.Roles.ByRole() {
			e.Fields["admin.roles."+rg.Role] = text(rg.Groups)
		}
	} else {
		e.Fields["admin.roles"] = "unset"
	}
	if len(cfg.Admin.DualControl) > 0 {
		e.Fields["admin.dual_control"] = text(cfg.Admin.DualControl)
	}
	if cfg.Source() == "" {
		e.Reason = "no configuration file: defaults, environment and flags"
		return e
	}
	e.Fields["path"], e.Fields["sha256"] = cfg.Source(), cfg.SHA256()
	return e
}

// APIClientCRL adds to e, a config_loaded entry (at start or on a
// reload), the provisioning API's CRL in force (admin.api_client_crl; crl nil: none): its cRLNumber,
// thisUpdate and the SHA-256 of its DER, so that an auditor can tell
// which revocations the API enforced from then on.
func APIClientCRL(e *store.AuditEntry, crl *x509.RevocationList) {
	if crl == nil {
		e.Fields["admin.api_client_crl"] = "none"
		return
	}
	sum := sha256.Sum256(crl.Raw)
	e.Fields["admin.api_client_crl.sha256"] = hex.EncodeToString(sum[:])
	e.Fields["admin.api_client_crl.this_update"] = crl.ThisUpdate.UTC().Format(time.RFC3339)
	if crl.Number != nil {
		e.Fields["admin.api_client_crl.number"] = crl.Number.String()
	}
}

// ConfigRefused is the audit entry of a reload that changed nothing:
// why is a fixed text, never the configuration's values.
func ConfigRefused(why string, now time.Time) *store.AuditEntry {
	return &store.AuditEntry{Time: now, Kind: store.AuditConfigLoaded, Actor: admin.Daemon().Actor, Outcome: store.AuditRefused,
		Reason: why, Fields: map[string]string{"event": ConfigReload}}
}

// Append appends entries to db's audit log in one write transaction.
func Append(ctx context.Context, db store.Store, entries ...*store.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return db.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		for _, e := range entries {
			if err := tx.AppendAudit(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// OIDCKeys records what the daemon changes by itself in the OIDC signing
// keys at start (KeyRing.Ensure and Purge), as Actor signd, in the key
// ring's transaction of each change: a key created (oidc_key_created,
// with its state), a next key promoted to active (oidc_keys_rotated:
// Target the new active key, Fields the key it retired) and retired keys
// purged (oidc_keys_rotated, Fields["purged"]). Rotations an operator
// asks for are the admin service's entries.
func OIDCKeys(now func() time.Time) oidc.Recorder {
	return admin.OIDCKeyRecorder(admin.Daemon().Actor, "at start", now)
}

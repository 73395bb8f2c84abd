package daemonaudit

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/config"
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

// OIDCKeys are the audit entries of what the daemon changed by itself
// in the OIDC signing keys at start (KeyRing.Ensure and Purge), from the
// keys before and after: a key created (oidc_key_created, with its state),
// a next key promoted to active (oidc_keys_rotated: Target the new active
// key, Fields the key it retired) and retired keys purged
// (oidc_keys_rotated, Fields["purged"]). Rotations an operator asks for
// are the admin service's entries.
func OIDCKeys(before, after []store.SigningKey, now time.Time) []*store.AuditEntry {
	actor := admin.Daemon().Actor
	old := map[string]store.SigningKey{}
	for _, k := range before {
		old[k.KID] = k
	}
	var out []*store.AuditEntry
	kept := map[string]bool{}
	for _, k := range after {
		kept[k.KID] = true
		prev, existed := old[k.KID]
		switch {
		case !existed:
			out = append(out, &store.AuditEntry{Time: now, Kind: store.AuditOIDCKeyCreated, Actor: actor,
				Target: "oidc-key:" + k.KID, Outcome: store.AuditOK,
				Fields: map[string]string{"alg": k.Algorithm, "state": string(k.State), "label": k.Label}})
		case prev.State == store.SigningKeyNext && k.State == store.SigningKeyActive:
			e := &store.AuditEntry{Time: now, Kind: store.AuditOIDCKeysRotated, Actor: actor,
				Target: "oidc-key:" + k.KID, Outcome: store.AuditOK, Reason: "next key promoted at start",
				Fields: map[string]string{"alg": k.Algorithm, "active": k.KID}}
			if r := retiredBy(before, after, k.Algorithm); r != "" {
				e.Fields["retired"] = r
			}
			out = append(out, e)
		}
	}
	var purged []string
	for _, k := range before {
		if !kept[k.KID] {
			purged = append(purged, k.KID)
		}
	}
	if len(purged) > 0 {
		slices.Sort(purged)
		out = append(out, &store.AuditEntry{Time: now, Kind: store.AuditOIDCKeysRotated, Actor: actor, Outcome: store.AuditOK,
			Reason: "retired keys purged: their ID tokens have expired",
			Fields: map[string]string{"purged": strings.Join(purged, " "), "count": strconv.Itoa(len(purged))}})
	}
	return out
}

// retiredBy returns the KID of the key of alg that was active in before
// and is retired in after, "" when none.
func retiredBy(before, after []store.SigningKey, alg string) string {
	for _, a := range after {
		if a.Algorithm != alg || a.State != store.SigningKeyRetired {
			continue
		}
		for _, b := range before {
			if b.KID == a.KID && b.State == store.SigningKeyActive {
				return a.KID
			}
		}
	}
	return ""
}

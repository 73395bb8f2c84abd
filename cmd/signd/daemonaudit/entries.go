package daemonaudit

import (
	"context"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/config"
	"github.com/signd/signd/config/clientca"
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

// The fields of the provisioning API's CRL in force in a config_loaded
// entry (APIClientCRL).
const (
	crlNone       = "admin.api_client_crl"
	crlSHA256     = "admin.api_client_crl.sha256"
	crlThisUpdate = "admin.api_client_crl.this_update"
	crlNumber     = "admin.api_client_crl.number"
	crlIssuer     = "admin.api_client_crl.issuer"
)

// APIClientCRL adds to e, a config_loaded entry (at start or on a
// reload), the provisioning API's CRL in force (admin.api_client_crl; crl nil: none): its cRLNumber,
// thisUpdate, issuer name and the SHA-256 of its DER (clientca.RecordOf), so that an auditor can tell
// which revocations the API enforced from then on, and a start that the
// CRL does not go back (AppendStart).
func APIClientCRL(e *store.AuditEntry, crl *x509.RevocationList) {
	if crl == nil {
		e.Fields[crlNone] = "none"
		return
	}
	r := clientca.RecordOf(crl)
	e.Fields[crlSHA256] = hex.EncodeToString(r.SHA256[:])
	e.Fields[crlThisUpdate] = r.ThisUpdate.UTC().Format(time.RFC3339)
	e.Fields[crlIssuer] = r.Issuer
	if r.Number != nil {
		e.Fields[crlNumber] = r.Number.String()
	}
}

// RecordedCRL is the CRL that e, a config_loaded entry of APIClientCRL,
// records in force; nil when it records none. An entry written before the
// issuer name was recorded gives a Record without it.
func RecordedCRL(e *store.AuditEntry) (*clientca.Record, error) {
	sum := e.Fields[crlSHA256]
	if sum == "" {
		return nil, nil
	}
	var r clientca.Record
	d, err := hex.DecodeString(sum)
	if err != nil || len(d) != len(r.SHA256) {
		return nil, fmt.Errorf("%s %q is not a SHA-256 in hex", crlSHA256, sum)
	}
	copy(r.SHA256[:], d)
	if r.ThisUpdate, err = time.Parse(time.RFC3339, e.Fields[crlThisUpdate]); err != nil {
		return nil, fmt.Errorf("%s: %v", crlThisUpdate, err)
	}
	if n, ok := e.Fields[crlNumber]; ok {
		if r.Number, ok = new(big.Int).SetString(n, 10); !ok || r.Number.Sign() < 0 {
			return nil, fmt.Errorf("%s %q is not a cRLNumber", crlNumber, n)
		}
	}
	r.Issuer = e.Fields[crlIssuer]
	return &r, nil
}

// LastCRL is the last config_loaded entry of tx's audit log that put a
// CRL of the issuer named issuer in force (at a start or a reload that was
// not refused; an entry written before the issuer name was recorded
// counts for every issuer), and that CRL: nil, nil, nil when the log
// records none. It reads the log backwards from its end
// (store.LastAuditEntry). An entry that records "none" (the CRL removed)
// or another issuer's CRL is passed over: the CRL of this issuer in force
// before it is the one a CRL put back must not go back from.
func LastCRL(tx store.AuditTx, issuer string) (*store.AuditEntry, *clientca.Record, error) {
	e, err := store.LastAuditEntry(tx, func(e *store.AuditEntry) bool {
		named, ok := e.Fields[crlIssuer]
		return e.Kind == store.AuditConfigLoaded && e.Outcome == store.AuditOK && e.Fields[crlSHA256] != "" &&
			(!ok || named == issuer)
	})
	if err != nil || e == nil {
		return nil, nil, err
	}
	r, err := RecordedCRL(e)
	if err != nil {
		return nil, nil, fmt.Errorf("config_loaded entry %d: %w", e.Seq, err)
	}
	return e, r, nil
}

// RollbackError is a start refused because its CRL goes back from the
// CRL last in force (AppendStart).
type RollbackError struct {
	// Rule is clientca.Rollback's reason.
	Rule error
	// Entry is the config_loaded entry that records the CRL last in
	// force, Last that CRL, CRL the one refused.
	Entry *store.AuditEntry
	Last  *clientca.Record
	CRL   *x509.RevocationList
}

func (e *RollbackError) Error() string {
	return fmt.Sprintf("%v. The audit log's config_loaded entry %d (%s) records the CRL last in force: %s; this CRL: %s. "+
		"A restart does not go back to an older CRL: put the CA's newest CRL in place, or have the CA issue a new one (a higher cRLNumber, a later thisUpdate)",
		e.Rule, e.Entry.Seq, e.Entry.Time.UTC().Format(time.RFC3339), describe(e.Last), describe(new(clientca.RecordOf(e.CRL))))
}

// describe names a recorded CRL in a message.
func describe(r *clientca.Record) string {
	n := "none"
	if r.Number != nil {
		n = r.Number.String()
	}
	return fmt.Sprintf("cRLNumber %s, thisUpdate %s, SHA-256 %x", n, r.ThisUpdate.UTC().Format(time.RFC3339), r.SHA256)
}

// AppendStart appends loaded, the config_loaded entry of a start whose
// provisioning API puts crl in force (nil: none, or no API), unless crl
// goes back from the CRL of its issuer last in force as the audit log
// records it (LastCRL, clientca.Rollback): a CRL file put back from a backup that
// does not list a later revocation. Then it appends, instead, a refused
// config_loaded entry (event start) naming crl and why, and returns a
// *RollbackError. The look-up and the append are one transaction. An
// audit log that cannot be read is an error: the start cannot tell.
func AppendStart(ctx context.Context, db store.Store, loaded *store.AuditEntry, crl *x509.RevocationList) error {
	var refused *RollbackError
	err := db.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		refused = nil
		if crl != nil {
			e, last, err := LastCRL(tx, clientca.RecordOf(crl).Issuer)
			if err != nil {
				return fmt.Errorf("reading the CRL last in force (admin.api_client_crl must not go back from it): %w", err)
			}
			if err := clientca.Rollback(last, crl); err != nil {
				refused = &RollbackError{Rule: err, Entry: e, Last: last, CRL: crl}
				r := ConfigRefused(refused.Error(), loaded.Time)
				r.Fields["event"], r.Ref = ConfigStart, e.Seq
				APIClientCRL(r, crl)
				return tx.AppendAudit(r)
			}
		}
		return tx.AppendAudit(loaded)
	})
	if err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	return nil
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

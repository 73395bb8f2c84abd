package admin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/store"
)

// AuditVerify implements Service: it checks the whole hash chain of the
// audit log in the store. A broken chain is a report, not an error; errors
// are the store's, returned as they are (the daemon logs them and answers
// KindInternal). Whatever the stored bytes, it returns an error rather
// than panic.
//
// Its admin_read entry is appended after the verification and before the
// report is returned (no report without its entry), naming the entries
// and head it verified; the report's head is that of the last entry
// before it. A log found broken is not written to (it is evidence, and
// the CLI may be looking at a copy): that verification is in the log
// line only, at ERROR.
func (l *Local) AuditVerify(ctx context.Context, by Principal) (res *AuditReport, err error) {
	a, err := l.read(ctx, by, "AuditVerify", "audit", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if res, err = l.verifyAudit(ctx); err != nil {
		return nil, err
	}
	if !res.OK {
		a.unaudited = fmt.Sprintf("the audit log is broken at entry %d (%s): nothing is written into it", res.BrokenAt, res.Reason)
		return res, nil
	}
	a.result["entries"] = strconv.FormatUint(res.Entries, 10)
	a.result["head"] = res.Head
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

func (l *Local) verifyAudit(ctx context.Context) (res *AuditReport, err error) {
	defer recoverRead("audit verify", &err)
	res = &AuditReport{}
	err = l.Store.View(ctx, func(tx store.Tx) error {
		n, head, err := store.VerifyAudit(tx)
		res.Entries, res.Head = n, hex.EncodeToString(head)
		var be *store.AuditBrokenError
		if errors.As(err, &be) {
			res.BrokenAt, res.Reason = be.Seq, be.Reason
			return nil
		}
		res.OK = err == nil
		return err
	})
	return res, err
}

// AuditExport implements Service: it writes the entries req selects to w
// as JSON lines, oldest first, in their stored (canonical) encoding, so
// that each line verifies on its own (its digest covers its content). An
// entry that does not decode stops the export with an error naming it.
//
// Its admin_read entry, naming the filter, is appended first: an export
// whose filter selects it includes it.
func (l *Local) AuditExport(ctx context.Context, by Principal, req AuditExportRequest, w io.Writer) (err error) {
	a, err := l.read(ctx, by, "AuditExport", "audit", req.fields())
	if err != nil {
		return err
	}
	defer a.end(ctx, &err)
	if err := req.check(); err != nil {
		return err
	}
	if err := a.grant(ctx); err != nil {
		return err
	}
	defer recoverRead("audit export", &err)
	return l.Store.View(ctx, func(tx store.Tx) error {
		return tx.AuditRecords(1, func(seq uint64, raw []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := store.DecodeAuditEntry(raw)
			if err != nil {
				return &store.AuditBrokenError{Seq: seq, Reason: err.Error()}
			}
			if !req.selects(e) {
				return nil
			}
			if _, err := w.Write(raw); err != nil {
				return err
			}
			_, err = w.Write([]byte{'\n'})
			return err
		})
	})
}

// recoverRead turns a panic while reading the store into an error wrapping
// store.ErrCorrupt: the last line of defence of the readers of a whole
// log, after the structure check and the store's own fault handling.
func recoverRead(what string, err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%s: %w: reading the store panicked: %v (run `signd store check`)", what, store.ErrCorrupt, v)
	}
}

// AuditExportRequest selects the audit entries to export: an entry is
// exported when it matches every filter given. No filter exports all.
type AuditExportRequest struct {
	Since time.Time `json:"since"`           // only entries at or after Since; zero = from the first
	Until time.Time `json:"until,omitzero"`  // only entries before Until; zero = to the last
	Kinds []string  `json:"kinds,omitempty"` // only entries of one of these kinds (store.KnownAuditKind)
	// Actor selects the entries whose actor contains it: "uid:1001"
	// matches "uid:1001 (alice)"; "uid:1001 (" matches only that uid.
	Actor string `json:"actor,omitempty"`
	// Target selects the entries about one thing, named as audit
	// targets are ("user:alice", "client:rp", "credential:<id>",
	// "oidc-key:<kid>", "tsa-key:<hex id>"): entries whose Target is
	// exactly it, and for "user:", "client:" and "credential:" also every
	// entry whose User, Client or Credential field is that name (the
	// protocol's entries, which name no target: signHash, authorize; and
	// for a user, the acts on the user's credentials).
	Target string `json:"target,omitempty"`
}

// maxExportFilter bounds the export filter's strings and kinds.
const maxExportFilter = 256

// check refuses a filter that can select nothing by mistake.
func (r AuditExportRequest) check() error {
	if !r.Until.IsZero() && !r.Until.After(r.Since) {
		return errorf(KindInvalid, "until (%s) must be after since (%s)", r.Until.UTC().Format(time.RFC3339Nano), r.Since.UTC().Format(time.RFC3339Nano))
	}
	if len(r.Kinds) > maxExportFilter {
		return errorf(KindInvalid, "at most %d kinds", maxExportFilter)
	}
	for _, k := range r.Kinds {
		if !store.KnownAuditKind(store.AuditKind(k)) {
			return errorf(KindInvalid, "unknown audit kind %.64q (kinds: %s)", k, strings.Join(store.AuditKinds(), ", "))
		}
	}
	for name, v := range map[string]string{"actor": r.Actor, "target": r.Target} {
		if len(v) > maxExportFilter || !printable(v) {
			return errorf(KindInvalid, "%s must be at most %d printable characters", name, maxExportFilter)
		}
	}
	return nil
}

// fields names the filter in the export's admin_read entry.
func (r AuditExportRequest) fields() map[string]string {
	f := map[string]string{}
	if !r.Since.IsZero() {
		f["since"] = r.Since.UTC().Format(time.RFC3339Nano)
	}
	if !r.Until.IsZero() {
		f["until"] = r.Until.UTC().Format(time.RFC3339Nano)
	}
	if len(r.Kinds) > 0 {
		f["kinds"] = strings.Join(r.Kinds, ",")
	}
	if r.Actor != "" {
		f["actor"] = r.Actor
	}
	if r.Target != "" {
		f["target"] = r.Target
	}
	return f
}

// selects reports whether e matches every filter of r.
func (r AuditExportRequest) selects(e *store.AuditEntry) bool {
	if e.Time.Before(r.Since) || (!r.Until.IsZero() && !e.Time.Before(r.Until)) {
		return false
	}
	if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, string(e.Kind)) {
		return false
	}
	if r.Actor != "" && !strings.Contains(e.Actor, r.Actor) {
		return false
	}
	if r.Target != "" && e.Target != r.Target {
		kind, name, _ := strings.Cut(r.Target, ":")
		switch {
		case name == "":
			return false
		case kind == "user" && e.User == name, kind == "client" && e.Client == name, kind == "credential" && e.Credential == name:
		default:
			return false
		}
	}
	return true
}

// AuditReport is the outcome of an audit log verification.
type AuditReport struct {
	OK       bool   `json:"ok"`
	Entries  uint64 `json:"entries"`             // entries verified
	Head     string `json:"head"`                // digest of the last verified entry, hex
	BrokenAt uint64 `json:"broken_at,omitempty"` // first broken entry
	Reason   string `json:"reason,omitempty"`
}

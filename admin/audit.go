package admin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/signd/signd/store"
)

// AuditVerify implements Service: it checks the whole hash chain of the
// audit log in the store. A broken chain is a report, not an error; errors
// are the store's, returned as they are (the daemon logs them and answers
// KindInternal). Whatever the stored bytes, it returns an error rather
// than panic.
func (l *Local) AuditVerify(ctx context.Context, by Principal) (res *AuditReport, err error) {
	if err := l.allow(ctx, by, "AuditVerify"); err != nil {
		return nil, err
	}
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

// AuditExport implements Service: it writes the entries at or after
// req.Since to w as JSON lines, oldest first, in their stored (canonical)
// encoding. An entry that does not decode stops the export with an error
// naming it.
func (l *Local) AuditExport(ctx context.Context, by Principal, req AuditExportRequest, w io.Writer) (err error) {
	if err := l.allow(ctx, by, "AuditExport"); err != nil {
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
			if e.Time.Before(req.Since) {
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

// AuditExportRequest selects the audit entries to export.
type AuditExportRequest struct {
	Since time.Time `json:"since"` // only entries at or after Since; zero = all
}

// AuditReport is the outcome of an audit log verification.
type AuditReport struct {
	OK       bool   `json:"ok"`
	Entries  uint64 `json:"entries"`             // entries verified
	Head     string `json:"head"`                // digest of the last verified entry, hex
	BrokenAt uint64 `json:"broken_at,omitempty"` // first broken entry
	Reason   string `json:"reason,omitempty"`
}

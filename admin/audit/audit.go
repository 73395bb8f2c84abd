package audit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/hsmkeys"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/store"
)

// Audit performs the operations on the audit log: its verification and
// export (audit.go), the audit key and the checkpoints (checkpoint.go).
// The verification and export need only the store.
type Audit struct {
	*act.Core
	// HSM opens the token that holds the audit key (HSM.KeyStore).
	HSM *hsmkeys.HSM
	// AuditKeyLabel is the audit key's label (audit.key_label) and
	// Checkpoints signs the audit checkpoints; nil: the audit key and
	// checkpoint operations answer KindUnavailable.
	AuditKeyLabel string
	Checkpoints   *checkpoint.Maker
}

// AuditVerify performs Service.AuditVerify: it checks every hash chain of
// the audit log in the store (one per node of a cluster whose nodes are
// named, each from its first entry) and that the registry of chains
// agrees with them. A broken chain is a report, not an error; errors
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
func (l *Audit) AuditVerify(ctx context.Context, by principal.Principal) (res *ops.AuditReport, err error) {
	a, err := l.Read(ctx, by, "AuditVerify", "audit", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if res, err = l.verifyAudit(ctx); err != nil {
		return nil, err
	}
	if !res.OK {
		a.Unaudited = fmt.Sprintf("the audit log is broken at %s (%s): nothing is written into it", ops.Broken(res.BrokenChain, res.BrokenAt), res.Reason)
		return res, nil
	}
	a.Result["entries"] = strconv.FormatUint(res.Entries, 10)
	a.Result["head"] = res.Head
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

func (l *Audit) verifyAudit(ctx context.Context) (res *ops.AuditReport, err error) {
	defer recoverRead("audit verify", &err)
	res = &ops.AuditReport{}
	err = l.Store.View(ctx, func(tx store.Tx) error {
		heads, err := store.VerifyAuditChains(tx)
		n, head := store.AuditLogHead(heads)
		res.Entries, res.Head = n, hex.EncodeToString(head)
		if len(heads) > 1 {
			for _, h := range heads {
				res.Chains = append(res.Chains, ops.AuditChainView{Chain: h.Chain, Entries: h.Size, Head: hex.EncodeToString(h.Head)})
			}
		}
		var be *store.AuditBrokenError
		if errors.As(err, &be) {
			res.BrokenAt, res.BrokenChain, res.Reason = be.Seq, be.Chain, be.Reason
			return nil
		}
		res.OK = err == nil
		return err
	})
	return res, err
}

// AuditExport performs Service.AuditExport: it writes the entries req
// selects to w as JSON lines, oldest first, in their stored (canonical)
// encoding, so that each line verifies on its own (its digest covers its
// content). The chains of a log of several (one per node) are merged in cluster order:
// by the revision each entry sealed, then by chain name, then by
// sequence number (store.AuditEntries). An entry that does not decode
// stops the export with an error naming it.
//
// Its admin_read entry, naming the filter, is appended first: an export
// whose filter selects it includes it.
func (l *Audit) AuditExport(ctx context.Context, by principal.Principal, req ops.AuditExportRequest, w io.Writer) (err error) {
	a, err := l.Read(ctx, by, "AuditExport", "audit", req.Fields())
	if err != nil {
		return err
	}
	defer a.End(ctx, &err)
	if err := req.Check(); err != nil {
		return err
	}
	if err := a.Grant(ctx); err != nil {
		return err
	}
	defer recoverRead("audit export", &err)
	return l.Store.View(ctx, func(tx store.Tx) error {
		return store.AuditRawEntries(tx, 1, func(e *store.AuditEntry, raw []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !req.Selects(e) {
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

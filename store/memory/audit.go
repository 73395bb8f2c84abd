package memory

import (
	"bytes"

	"github.com/signd/signd/store"
)

// The audit log: sequence number → the canonical encoding of the entry
// (store.SealAudit) and its digest, the Prev of the next entry. The chain
// is store's, so store.VerifyAudit checks it exactly as it checks bolt's.

type auditRecord struct {
	raw    []byte
	digest []byte
}

// auditPage is how many entries AuditRecords takes from the tree at a time,
// so that fn may use the transaction (even write to it) between pages.
const auditPage = 256

// AppendAudit implements store.AuditTx.
func (t *tx) AppendAudit(e *store.AuditEntry) error {
	if err := t.writes(); err != nil {
		return err
	}
	if e.Time.IsZero() {
		e.Time = t.stamp()
	}
	seq, prev := uint64(1), store.AuditGenesis()
	if last, head, ok := t.s.audit.last(); ok {
		seq, prev = last+1, head.digest
	}
	raw, err := store.SealAudit(e, seq, prev)
	if err != nil {
		return err
	}
	t.s.audit.put(seq, auditRecord{raw: raw, digest: bytes.Clone(e.Digest)})
	return nil
}

// AuditRecords implements store.AuditTx. raw is a buffer reused from call
// to call, so fn cannot change what is stored.
func (t *tx) AuditRecords(from uint64, fn func(seq uint64, raw []byte) error) error {
	type record struct {
		seq uint64
		raw []byte
	}
	var buf []byte
	page := make([]record, 0, auditPage)
	for {
		page = page[:0]
		t.s.audit.from(from, func(seq uint64, r auditRecord) bool {
			page = append(page, record{seq, r.raw})
			return len(page) < auditPage
		})
		for _, r := range page {
			buf = append(buf[:0], r.raw...)
			if err := fn(r.seq, buf); err != nil {
				return err
			}
		}
		if len(page) < auditPage {
			return nil
		}
		from = page[len(page)-1].seq + 1
	}
}

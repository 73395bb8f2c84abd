package kv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/signd/signd/store"
)

// The audit log lives in bucketAudit: the sequence number as 8 bytes
// big-endian → the canonical encoding of the entry (store.SealAudit). Keys
// sort in sequence order, so appending is a cursor Last and verifying a
// forward walk.
const bucketAudit = "audit"

func auditKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// AppendAudit implements store.AuditTx. It chains the entry to the stored
// head; a head whose digest cannot be read stops every append (the log
// fails closed: signd audit verify names the entry).
func (t *Tx) AppendAudit(e *store.AuditEntry) error {
	if err := t.writable(); err != nil {
		return err
	}
	b, err := t.bucket(bucketAudit)
	if err != nil {
		return err
	}
	if e.Time.IsZero() {
		e.Time = t.stamp()
	}
	seq, prev := uint64(1), store.AuditGenesis()
	if k, v := b.Last(); k != nil {
		if len(k) != 8 {
			return fmt.Errorf("store: audit log head has a malformed key %x", k)
		}
		seq = binary.BigEndian.Uint64(k) + 1
		if prev, err = headDigest(v); err != nil {
			return fmt.Errorf("store: audit log head (entry %d): %w (run `signd audit verify`)", seq-1, err)
		}
	}
	raw, err := store.SealAudit(e, seq, prev)
	if err != nil {
		return err
	}
	if err := b.Put(auditKey(seq), raw); err != nil {
		return fmt.Errorf("store: put audit entry %d: %w", seq, err)
	}
	return nil
}

// headDigest reads only the digest of a stored entry: appending must not
// depend on the rest of the head being canonical.
func headDigest(raw []byte) ([]byte, error) {
	var h struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("undecodable: %v", err)
	}
	d, err := hex.DecodeString(h.Digest)
	if err != nil || len(d) != 32 {
		return nil, fmt.Errorf("bad digest %q", h.Digest)
	}
	return d, nil
}

// AuditRecords implements store.AuditTx.
func (t *Tx) AuditRecords(from uint64, fn func(seq uint64, raw []byte) error) error {
	b, err := t.bucket(bucketAudit)
	if err != nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.Seek(auditKey(from)); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			return &store.AuditBrokenError{Seq: 0, Reason: fmt.Sprintf("malformed key %x", bytes.Clone(k))}
		}
		if err := fn(binary.BigEndian.Uint64(k), v); err != nil {
			return err
		}
	}
	return nil
}

// AuditSize implements store.AuditTx: the head's key (one cursor Last).
func (t *Tx) AuditSize() (uint64, error) {
	b, err := t.bucket(bucketAudit)
	if err != nil {
		return 0, err
	}
	k, _ := b.Last()
	switch {
	case k == nil:
		return 0, nil
	case len(k) != 8:
		return 0, fmt.Errorf("store: audit log head has a malformed key %x", k)
	}
	return binary.BigEndian.Uint64(k), nil
}

package kv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/auditlog"
)

// The audit log is one or more hash chains, each in a bucket of its own:
// the sequence number as 8 bytes big-endian → the canonical encoding of
// the entry (store.SealAudit). Keys sort in sequence order, so appending
// is a cursor Last and verifying a forward walk. Chain "" is bucketAudit
// (bbolt's only chain); a node's chain N is the bucket "audit.N"
// (auditlog.ChainBucket), registered in bucketAuditChains (N → JSON
// auditChainRecord) by the transaction of its first entry.
const (
	bucketAudit       = "audit"
	bucketAuditChains = "audit_chains"
)

// AuditChainer is a Backend whose transactions append to an audit chain
// of their own (store/etcd: the node's, Options.Node). A Backend without
// it, or whose AuditChain is "", appends to chain "".
type AuditChainer interface {
	AuditChain() string
}

// Reviser is a Backend with a cluster order: Revision is the revision of
// the snapshot the transaction reads (store/etcd), sealed into each audit
// entry it appends (auditlog.Entry.Rev). It is asked after the
// transaction's first read; 0 means none.
type Reviser interface {
	Revision() int64
}

// AuditBucketLister is a Backend that can list the chain buckets it
// holds: the names of the buckets "audit.<chain>" that hold at least one
// key, sorted. Verification compares them with the registry of chains
// (a stored chain that is not registered, a registered one that is not
// stored); a Backend without it is taken to hold exactly the registered
// chains.
type AuditBucketLister interface {
	AuditBuckets() ([]string, error)
}

// auditChainRecord is a chain's entry in the registry.
type auditChainRecord struct {
	Created time.Time `json:"created"` // when its first entry was appended
}

func auditKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// auditChain is the chain this transaction appends to.
func (t *Tx) auditChain() string {
	if c, ok := t.kv.(AuditChainer); ok {
		return c.AuditChain()
	}
	return ""
}

// AppendAudit implements store.AuditTx. It chains the entry to the head
// of the transaction's chain (AuditChainer), sealing the chain's name and
// the backend's revision (Reviser) into it, and registers the chain with
// its first entry. A head whose digest cannot be read stops every append
// (the log fails closed: signd audit verify names the entry).
func (t *Tx) AppendAudit(e *store.AuditEntry) error {
	if err := t.writable(); err != nil {
		return err
	}
	chain := t.auditChain()
	b, err := t.bucket(auditlog.ChainBucket(chain))
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
	e.Chain, e.Rev = chain, 0
	if r, ok := t.kv.(Reviser); ok {
		e.Rev = r.Revision()
	}
	raw, err := store.SealAudit(e, seq, prev)
	if err != nil {
		return err
	}
	if seq == 1 && chain != "" {
		if err := t.put(bucketAuditChains, chain, auditChainRecord{Created: e.Time}); err != nil {
			return err
		}
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

// AuditChains implements store.AuditTx: chain "", then the registered
// chains and those the backend holds (AuditBucketLister), by name.
func (t *Tx) AuditChains() ([]store.AuditChainInfo, error) {
	byName := map[string]*store.AuditChainInfo{}
	out := []store.AuditChainInfo{{Name: "", Registered: true, Stored: true}}
	var names []string
	info := func(name string) *store.AuditChainInfo {
		c := byName[name]
		if c == nil {
			c = &store.AuditChainInfo{Name: name}
			byName[name] = c
			names = append(names, name)
		}
		return c
	}
	lister, canList := t.kv.(AuditBucketLister)
	// A file of an earlier signd opened read-only has no registry yet:
	// none of its chains is registered, as it has chain "" alone.
	if reg := t.kv.Bucket(bucketAuditChains); reg != nil {
		err := reg.ForEach(func(k, _ []byte) error {
			c := info(string(k))
			c.Registered, c.Stored = true, !canList
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if canList {
		buckets, err := lister.AuditBuckets()
		if err != nil {
			return nil, err
		}
		for _, b := range buckets {
			if name, ok := chainOfBucket(b); ok {
				info(name).Stored = true
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out, nil
}

// chainOfBucket returns the chain whose bucket is name ("audit.<chain>").
func chainOfBucket(name string) (string, bool) {
	const p = bucketAudit + "."
	if len(name) <= len(p) || name[:len(p)] != p {
		return "", false
	}
	return name[len(p):], true
}

// chainBucket returns the bucket of chain, nil when a backend with fixed
// buckets (bbolt, memory) has none for it: a chain it never held.
func (t *Tx) chainBucket(chain string) (Bucket, error) {
	if chain == "" {
		return t.bucket(bucketAudit)
	}
	if err := store.CheckAuditChain(chain); err != nil {
		return nil, err
	}
	return t.kv.Bucket(auditlog.ChainBucket(chain)), nil
}

// AuditChainRecords implements store.AuditTx.
func (t *Tx) AuditChainRecords(chain string, from uint64, fn func(seq uint64, raw []byte) error) error {
	b, err := t.chainBucket(chain)
	if err != nil || b == nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.Seek(auditKey(from)); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			return &store.AuditBrokenError{Chain: chain, Seq: 0, Reason: fmt.Sprintf("malformed key %x", bytes.Clone(k))}
		}
		if err := fn(binary.BigEndian.Uint64(k), v); err != nil {
			return err
		}
	}
	return nil
}

// AuditChainSize implements store.AuditTx: the head's key (one cursor
// Last).
func (t *Tx) AuditChainSize(chain string) (uint64, error) {
	b, err := t.chainBucket(chain)
	if err != nil || b == nil {
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

// AuditRecords implements store.AuditTx: a log of one chain is walked as
// it is stored, several are merged in cluster order (auditlog.Merge).
func (t *Tx) AuditRecords(from uint64, fn func(seq uint64, raw []byte) error) error {
	chains, err := t.AuditChains()
	if err != nil {
		return err
	}
	if len(chains) == 1 {
		return t.AuditChainRecords(chains[0].Name, from, fn)
	}
	return auditlog.Merge(t, from, func(e *store.AuditEntry, raw []byte) error { return fn(e.Seq, raw) })
}

// AuditSize implements store.AuditTx: the sum of every chain's size.
func (t *Tx) AuditSize() (uint64, error) {
	chains, err := t.AuditChains()
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range chains {
		size, err := t.AuditChainSize(c.Name)
		if err != nil {
			return 0, err
		}
		n += size
	}
	return n, nil
}

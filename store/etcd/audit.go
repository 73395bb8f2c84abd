package etcd

import (
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// One audit chain per node: a transaction appends to the chain named
// Options.Node (kv.AuditChainer), the bucket "audit.<node>", so the
// cursor Last that finds the head (and the guard on the bucket's version
// key it brings) is this node's alone; and it seals the snapshot revision
// into each entry (kv.Reviser), the cluster order in which verification
// and export interleave the chains.

// AuditChain is the chain this node appends to (kv.AuditChainer).
func (t *txn) AuditChain() string { return t.db.node }

// Revision is the snapshot revision the transaction reads at (kv.Reviser):
// with the watch cache, fixed by the transaction's start (its barrier);
// without it, by its first read (an append reads the chain's head first),
// 0 before that.
func (t *txn) Revision() int64 {
	t.start()
	return t.rev
}

// Node returns the name of this node's audit chain (Options.Node).
func (db *DB) Node() string { return db.node }

// AuditBuckets lists the buckets "audit.<chain>" that hold a key at the
// snapshot or in the overlay (kv.AuditBucketLister): one keys-only read
// of one key per bucket, each skipping past the bucket found. The keys
// of the buckets "audit.*" are exactly the range [prefix "r/audit.",
// prefix "r/audit/"), '.' sorting just before '/'. Only verification
// lists them; in a write transaction the list is not guarded (a chain is
// created with its registry entry, which is).
func (t *txn) AuditBuckets() ([]string, error) {
	first, end := t.db.prefix+"r/audit.", t.db.prefix+"r/audit/"
	found := map[string]bool{}
	for from := first; ; {
		resp, err := t.get(from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		if len(resp.Kvs) == 0 {
			break
		}
		rest := string(resp.Kvs[0].Key[len(t.db.prefix)+len("r/"):])
		name, _, _ := strings.Cut(rest, "/")
		found[name] = true
		// Past every key of the bucket: "r/" name "/" … < "r/" name "0".
		from = t.db.prefix + "r/" + name + "0"
	}
	for name, o := range t.writes {
		if !strings.HasPrefix(name, "audit.") || o.Len() == 0 {
			continue
		}
		has := false
		o.Ascend(func(w write) bool { has = !w.del; return !has })
		if has {
			found[name] = true
		}
	}
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

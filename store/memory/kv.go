package memory

import (
	"bytes"

	"github.com/google/btree"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// degree is the B-tree degree: nodes hold 15 to 31 items, so a write
// copies a few short arrays on its path.
const degree = 16

// item is one entry of a bucket. Put stores copies, and nothing writes
// them again: snapshots and the transactions reading them share them.
type item struct{ key, val []byte }

func less(a, b item) bool { return bytes.Compare(a.key, b.key) < 0 }

// snapshot is every bucket by name, each a B-tree in key order.
type snapshot map[string]*btree.BTreeG[item]

// clone returns a writable copy of s: O(1) per bucket, nodes are copied as
// they are written. Clones are made by the one writer only; readers of s
// may run meanwhile.
func (s snapshot) clone() snapshot {
	c := make(snapshot, len(s))
	for name, t := range s {
		c[name] = t.Clone()
	}
	return c
}

// txn is one transaction over a snapshot (View) or its clone (Update), as
// a kv.Backend.
type txn struct {
	s        snapshot
	writable bool
	done     bool
}

// Writable returns ErrTxDone once the transaction has ended, else
// store.ErrReadOnly inside View.
func (t *txn) Writable() error {
	switch {
	case t.done:
		return ErrTxDone
	case !t.writable:
		return store.ErrReadOnly
	}
	return nil
}

// Bucket returns the named bucket, or nil for a name New did not create.
func (t *txn) Bucket(name string) kv.Bucket {
	tree := t.s[name]
	if tree == nil {
		return nil
	}
	return &bucket{t: t, tree: tree}
}

// bucket is one B-tree of the transaction (kv.Bucket).
type bucket struct {
	t    *txn
	tree *btree.BTreeG[item]
}

func (b *bucket) Get(key []byte) []byte {
	it, _ := b.tree.Get(item{key: key})
	return it.val
}

// Put stores copies of key and value (never nil, as a present value reads
// in bbolt).
func (b *bucket) Put(key, value []byte) error {
	if err := b.t.Writable(); err != nil {
		return err
	}
	b.tree.ReplaceOrInsert(item{bytes.Clone(key), append([]byte{}, value...)})
	return nil
}

func (b *bucket) Delete(key []byte) error {
	if err := b.t.Writable(); err != nil {
		return err
	}
	b.tree.Delete(item{key: key})
	return nil
}

// ForEach calls fn with every entry in key order until it fails; fn must
// not write to the bucket.
func (b *bucket) ForEach(fn func(k, v []byte) error) error {
	var err error
	b.tree.Ascend(func(it item) bool {
		err = fn(it.key, it.val)
		return err == nil
	})
	return err
}

func (b *bucket) Cursor() kv.Cursor { return &cursor{tree: b.tree} }

func (b *bucket) Last() ([]byte, []byte) { return b.Cursor().Last() }

// cursor walks a bucket in key order (kv.Cursor). It remembers the key it
// stands on and finds the next from there, so writes between its moves
// (which bbolt's cursor does not allow) do not derail it.
type cursor struct {
	tree *btree.BTreeG[item]
	key  []byte // the entry it stands on; nil before the first move and at the end
}

func (c *cursor) First() ([]byte, []byte) { return c.move(c.tree.Min()) }

func (c *cursor) Last() ([]byte, []byte) { return c.move(c.tree.Max()) }

// Seek moves to the first entry whose key is at least seek.
func (c *cursor) Seek(seek []byte) ([]byte, []byte) { return c.move(c.from(seek, false)) }

// Next moves to the entry after the current one; nil at the end.
func (c *cursor) Next() ([]byte, []byte) {
	if c.key == nil {
		return nil, nil
	}
	return c.move(c.from(c.key, true))
}

// from returns the first entry whose key is at least k (after: greater
// than k).
func (c *cursor) from(k []byte, after bool) (found item, ok bool) {
	c.tree.AscendGreaterOrEqual(item{key: k}, func(it item) bool {
		if after && bytes.Equal(it.key, k) {
			return true
		}
		found, ok = it, true
		return false
	})
	return found, ok
}

func (c *cursor) move(it item, ok bool) ([]byte, []byte) {
	if !ok {
		c.key = nil
		return nil, nil
	}
	c.key = it.key
	return it.key, it.val
}

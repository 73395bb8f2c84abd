package memory

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"time"

	"github.com/google/btree"
)

// degree is the B-tree degree: nodes hold 15 to 31 items, so a write
// copies a few short arrays on its path.
const degree = 16

type entry[K cmp.Ordered, V any] struct {
	key K
	val V
}

// table is an ordered map on a copy-on-write B-tree. A committed table is
// never written: a write transaction writes to a clone.
type table[K cmp.Ordered, V any] struct {
	t *btree.BTreeG[entry[K, V]]
}

func newTable[K cmp.Ordered, V any]() table[K, V] {
	return table[K, V]{btree.NewG(degree, func(a, b entry[K, V]) bool { return a.key < b.key })}
}

// clone returns a copy that shares every node with t until one of them is
// written. Clones are made by the one writer only; readers of t may run
// meanwhile.
func (t table[K, V]) clone() table[K, V] { return table[K, V]{t.t.Clone()} }

func (t table[K, V]) get(k K) (V, bool) {
	e, ok := t.t.Get(entry[K, V]{key: k})
	return e.val, ok
}

func (t table[K, V]) has(k K) bool { return t.t.Has(entry[K, V]{key: k}) }

func (t table[K, V]) put(k K, v V) { t.t.ReplaceOrInsert(entry[K, V]{key: k, val: v}) }

func (t table[K, V]) delete(k K) { t.t.Delete(entry[K, V]{key: k}) }

// last returns the entry with the greatest key.
func (t table[K, V]) last() (K, V, bool) {
	e, ok := t.t.Max()
	return e.key, e.val, ok
}

// from calls fn with every entry whose key is at least k, in key order,
// until fn returns false. fn must not write to t.
func (t table[K, V]) from(k K, fn func(K, V) bool) {
	t.t.AscendGreaterOrEqual(entry[K, V]{key: k}, func(e entry[K, V]) bool { return fn(e.key, e.val) })
}

// below calls fn with every entry whose key is less than k, in key order,
// until fn returns false. fn must not write to t.
func (t table[K, V]) below(k K, fn func(K, V) bool) {
	t.t.AscendLessThan(entry[K, V]{key: k}, func(e entry[K, V]) bool { return fn(e.key, e.val) })
}

// all calls fn with every entry in key order until fn returns false.
func (t table[K, V]) all(fn func(K, V) bool) {
	t.t.Ascend(func(e entry[K, V]) bool { return fn(e.key, e.val) })
}

// set is an ordered set of string keys: an index.
type set = table[string, struct{}]

func newSet() set { return newTable[string, struct{}]() }

func (t table[K, V]) add(k K) {
	var zero V
	t.put(k, zero)
}

// withPrefix returns the keys of s that start with prefix, in order, with
// the prefix cut off.
func withPrefix(s set, prefix string) []string {
	var out []string
	s.from(prefix, func(k string, _ struct{}) bool {
		rest, ok := strings.CutPrefix(k, prefix)
		if ok {
			out = append(out, rest)
		}
		return ok
	})
	return out
}

// compositeKey joins key parts with 0x00, which validation keeps out of
// usernames and IDs.
func compositeKey(a, b string) string { return a + "\x00" + b }

// expiryKey is an expiry index key: the expiry as 8-byte big-endian Unix
// nanoseconds (clamped at 0, as in store/bolt) ‖ the fingerprint.
func expiryKey(exp time.Time, hash string) string {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(max(exp.UnixNano(), 0)))
	return string(k[:]) + hash
}

// expiring is one kind of record with an expiry and parties (tokens,
// pending requests, codes, sessions): the records by fingerprint, the
// expiry index (expiryKey → nothing) and the party index (party ‖
// fingerprint → nothing, see revoke.go). Every write keeps the three
// consistent.
type expiring[R any] struct {
	records  table[string, R]
	byExpiry set
	byParty  set
	// meta returns the expiry and the parties of a record.
	meta func(R) (time.Time, []string)
}

func newExpiring[R any](meta func(R) (time.Time, []string)) expiring[R] {
	return expiring[R]{records: newTable[string, R](), byExpiry: newSet(), byParty: newSet(), meta: meta}
}

func (x expiring[R]) clone() expiring[R] {
	return expiring[R]{records: x.records.clone(), byExpiry: x.byExpiry.clone(), byParty: x.byParty.clone(), meta: x.meta}
}

func (x expiring[R]) get(hash []byte) (R, bool) { return x.records.get(string(hash)) }

func (x expiring[R]) has(hash []byte) bool { return x.records.has(string(hash)) }

// put stores r under hash with its index entries, replacing (and
// unindexing) a record stored there before.
func (x expiring[R]) put(hash []byte, r R) {
	h := string(hash)
	if old, ok := x.records.get(h); ok {
		x.unindex(h, old)
	}
	x.records.put(h, r)
	exp, parties := x.meta(r)
	x.byExpiry.add(expiryKey(exp, h))
	for _, p := range parties {
		x.byParty.add(p + h)
	}
}

// remove deletes the record under hash with its index entries and returns
// it; false when there is none.
func (x expiring[R]) remove(hash []byte) (R, bool) {
	h := string(hash)
	r, ok := x.records.get(h)
	if ok {
		x.records.delete(h)
		x.unindex(h, r)
	}
	return r, ok
}

func (x expiring[R]) unindex(h string, r R) {
	exp, parties := x.meta(r)
	x.byExpiry.delete(expiryKey(exp, h))
	for _, p := range parties {
		x.byParty.delete(p + h)
	}
}

// expired returns the fingerprints of the records that expired at or before
// now, at most limit of them (all when limit is 0), earliest first: a walk
// of the expiry index up to now, costing what it returns.
func (x expiring[R]) expired(now time.Time, limit int) [][]byte {
	end := expiryKey(now.Add(1), "") // every key below this has expired
	var out [][]byte
	x.byExpiry.below(end, func(k string, _ struct{}) bool {
		out = append(out, []byte(k[8:]))
		return limit == 0 || len(out) < limit
	})
	return out
}

// filed returns the fingerprints filed under party p. Only keys of exactly
// p ‖ 32 bytes count, so that a name holding 0x00 (which only a token's
// unvalidated names could) never matches another party's range.
func (x expiring[R]) filed(p string) [][]byte {
	var out [][]byte
	for _, h := range withPrefix(x.byParty, p) {
		if len(h) == sha256.Size {
			out = append(out, []byte(h))
		}
	}
	return out
}

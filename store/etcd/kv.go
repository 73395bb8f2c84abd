package etcd

import (
	"context"
	"errors"
	"sort"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// pageSize is how many keys a cursor fetches from etcd at a time.
const pageSize = 128

// txn is one store transaction's view of etcd: every read is served at one
// revision (the snapshot, fixed by the first read), every write is buffered
// in an overlay that reads see, and commit sends the overlay as one etcd Txn
// guarded by the reads (see doc.go, "Transactions").
type txn struct {
	ctx      context.Context
	db       *DB
	writable bool
	done     bool
	// fence: commit puts the fence key, even with nothing else to write
	// (DB.Fence).
	fence bool

	// rev is the snapshot revision; 0 until the first read.
	rev int64
	// snap is the watch cache's state at rev when the transaction reads
	// it (cache.go); nil: every read asks etcd. started: start ran.
	snap    *snapshot
	started bool
	// err is the first read error: it poisons the transaction, whose
	// function's result it replaces (nothing commits).
	err error

	// cache holds the values read at rev (nil: absent) with their
	// ModRevision, by etcd key.
	cache map[string]cached
	// reads are the etcd keys read by point reads, with the ModRevision
	// they had at rev (0: absent); ranged the buckets read by cursors and
	// ForEach.
	reads  map[string]int64
	ranged map[string]struct{}
	// writes is the overlay, one sorted tree per bucket.
	writes map[string]*btree.BTreeG[write]
	// tops are the greatest entry of a bucket at rev (nil: empty), once a
	// cursor's Last has read it.
	tops map[string]*item

	// The journals of a savepoint (batch.go): undo holds the overlay entry
	// each write replaced, readLog and rangedLog the keys and buckets in
	// the order they joined reads and ranged.
	undo      []undo
	readLog   []string
	rangedLog []string
}

// cached is a value read at the snapshot (nil: absent) and its ModRevision
// (0: absent).
type cached struct {
	val []byte
	mod int64
}

// undo is what one buffered write replaced: prev if had, else nothing.
type undo struct {
	bucket string
	key    string
	prev   write
	had    bool
}

// write is one buffered write: a value, or a deletion.
type write struct {
	key string // key within the bucket
	val []byte
	del bool
}

func lessWrite(a, b write) bool { return a.key < b.key }

func newTxn(ctx context.Context, db *DB, writable bool) *txn {
	return &txn{
		ctx: ctx, db: db, writable: writable,
		cache: map[string]cached{}, reads: map[string]int64{}, ranged: map[string]struct{}{},
		writes: map[string]*btree.BTreeG[write]{}, tops: map[string]*item{},
	}
}

// Writable returns ErrTxDone once the transaction has ended, else
// store.ErrReadOnly inside View (kv.Backend).
func (t *txn) Writable() error {
	if t.done {
		return ErrTxDone
	}
	if !t.writable {
		return store.ErrReadOnly
	}
	return nil
}

// Bucket returns the named bucket (kv.Backend); every bucket exists.
func (t *txn) Bucket(name string) kv.Bucket { return &bucket{t: t, name: name} }

// fail records the first read error and returns it.
func (t *txn) fail(err error) error {
	if t.err == nil {
		t.err = t.db.unavailable(t.ctx, err)
	}
	return t.err
}

// start fixes the snapshot before the first read: the watch cache's, after
// its barrier (cache.go), or none (the cache is off, reloading or lagging:
// the first read of etcd fixes it). It returns the cache's snapshot, nil
// for direct reads.
func (t *txn) start() *snapshot {
	if t.started {
		return t.snap
	}
	t.started = true
	if t.db.cache == nil || t.err != nil {
		return nil
	}
	s, rev, err := t.db.cache.begin(t.ctx)
	if err != nil {
		t.fail(err)
		return nil
	}
	t.snap, t.rev = s, rev
	return s
}

// cached returns the snapshot of the watch cache when it holds bucket's
// records (every bucket but the audit chains and the proofs), else nil.
func (t *txn) cached(bucket string) *snapshot {
	if s := t.start(); s != nil && cachedBucket(bucket) {
		return s
	}
	return nil
}

// get runs one etcd range read at the snapshot revision, fixing it on the
// first read (linearizable: it needs the quorum, so a transaction never
// starts from a stale state). Later reads are serializable at the
// snapshot: any member that has applied that revision answers exactly
// what the leader would (etcd keeps every revision until compaction), and
// is spared the quorum round of a linearizable read; a member that has not
// applied it yet says so (ErrFutureRev), and the read is made
// linearizable.
func (t *txn) get(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if t.err != nil {
		return nil, t.err
	}
	ctx, cancel := t.db.requestContext(t.ctx)
	defer cancel()
	var resp *clientv3.GetResponse
	var err error
	t.db.stats.reads.Add(1)
	if t.rev == 0 {
		resp, err = t.db.kv.Get(ctx, key, opts...)
	} else {
		at := append(opts, clientv3.WithRev(t.rev))
		resp, err = t.db.kv.Get(ctx, key, append(at[:len(at):len(at)], clientv3.WithSerializable())...)
		if errors.Is(err, rpctypes.ErrFutureRev) {
			resp, err = t.db.kv.Get(ctx, key, at...)
		}
	}
	if err != nil {
		return nil, t.fail(err)
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	return resp, nil
}

// overlay returns the buffered writes of a bucket, creating the tree if
// create is set.
func (t *txn) overlay(bucket string, create bool) *btree.BTreeG[write] {
	o := t.writes[bucket]
	if o == nil && create {
		o = btree.NewG(16, lessWrite)
		t.writes[bucket] = o
	}
	return o
}

// bucket is one kind of record within a transaction (kv.Bucket). Keys are stored in etcd as
// prefix "r/" bucket "/" key.
type bucket struct {
	t    *txn
	name string
}

func (b *bucket) etcdKey(key string) string { return b.t.db.recordKey(b.name, key) }

// Get returns the value of key (non-nil, maybe empty), or nil if it is
// absent or the read failed (the transaction then fails).
func (b *bucket) Get(key []byte) []byte {
	k := string(key)
	if o := b.t.overlay(b.name, false); o != nil {
		if w, ok := o.Get(write{key: k}); ok {
			if w.del {
				return nil
			}
			return w.val
		}
	}
	ek := b.etcdKey(k)
	if s := b.t.cached(b.name); s != nil {
		v, mod := s.get(ek)
		b.t.read(ek, mod)
		return v
	}
	c, ok := b.t.cache[ek]
	if !ok {
		resp, err := b.t.get(ek)
		if err != nil {
			return nil
		}
		if len(resp.Kvs) == 1 {
			c = cached{val: resp.Kvs[0].Value, mod: resp.Kvs[0].ModRevision}
			if c.val == nil {
				c.val = []byte{}
			}
		}
		b.t.cache[ek] = c
	}
	b.t.read(ek, c.mod)
	return c.val
}

// read adds a point read to the guard of a write transaction (once per
// key: a savepoint may have taken it out again).
func (t *txn) read(ek string, mod int64) {
	if !t.writable {
		return
	}
	if _, ok := t.reads[ek]; !ok {
		t.reads[ek] = mod
		t.readLog = append(t.readLog, ek)
	}
}

// rangeRead adds a range read of bucket to the guard (its version key).
func (t *txn) rangeRead(bucket string) {
	if _, ok := t.ranged[bucket]; !ok {
		t.ranged[bucket] = struct{}{}
		t.rangedLog = append(t.rangedLog, bucket)
	}
}

// buffer puts w into the overlay of bucket, journaling what it replaced.
func (t *txn) buffer(bucket string, w write) {
	prev, had := t.overlay(bucket, true).ReplaceOrInsert(w)
	t.undo = append(t.undo, undo{bucket: bucket, key: w.key, prev: prev, had: had})
}

// Put buffers key → value; value must not change until the transaction
// ends.
func (b *bucket) Put(key, value []byte) error {
	if b.t.done {
		return ErrTxDone
	}
	if value == nil {
		value = []byte{}
	}
	b.t.buffer(b.name, write{key: string(key), val: value})
	return nil
}

// Delete buffers the deletion of key.
func (b *bucket) Delete(key []byte) error {
	if b.t.done {
		return ErrTxDone
	}
	b.t.buffer(b.name, write{key: string(key), del: true})
	return nil
}

// ForEach calls fn with every entry of the bucket in key order.
func (b *bucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

// Cursor returns a cursor over the bucket. Reading a range guards the
// commit with the bucket's version key (doc.go).
func (b *bucket) Cursor() kv.Cursor {
	b.t.rangeRead(b.name)
	return &cursor{b: b}
}

// Last returns the last entry of the bucket (cursor.Last; it guards the
// commit as a range read does).
func (b *bucket) Last() ([]byte, []byte) { return b.Cursor().Last() }

// item is one entry a cursor yields.
type item struct {
	key string
	val []byte
}

// cursor walks a bucket forward in pages of etcd keys merged with the
// overlay. A failed read ends the walk and fails the transaction.
type cursor struct {
	b     *bucket
	items []item
	i     int
	// more: etcd has keys from next on that are not in items yet.
	more bool
	next string
}

// load fills the window from the key from on: one page of etcd keys and
// the overlay entries up to the last of them (to the end of the bucket
// when etcd has no more).
func (c *cursor) load(from string) {
	for {
		t := c.b.t
		page, more, err := t.page(c.b.name, from)
		if err != nil {
			c.items, c.more = nil, false
			return
		}
		merged := map[string][]byte{}
		var last string
		for _, e := range page {
			last = e.key
			merged[last] = e.val
		}
		c.more = more
		c.next = last + "\x00"
		if o := t.overlay(c.b.name, false); o != nil {
			o.AscendGreaterOrEqual(write{key: from}, func(w write) bool {
				if c.more && w.key > last {
					return false
				}
				if w.del {
					delete(merged, w.key)
				} else {
					merged[w.key] = w.val
				}
				return true
			})
		}
		c.items = c.items[:0]
		for k, v := range merged {
			c.items = append(c.items, item{k, v})
		}
		sort.Slice(c.items, func(i, j int) bool { return c.items[i].key < c.items[j].key })
		c.i = 0
		if len(c.items) > 0 || !c.more {
			return
		}
		from = c.next
	}
}

// page returns the entries of bucket at the snapshot from the key from on,
// pageSize at most, and whether more follow: from the watch cache, or one
// etcd read.
func (t *txn) page(bucket, from string) ([]item, bool, error) {
	prefix := t.db.recordKey(bucket, "")
	if s := t.cached(bucket); s != nil {
		items, more := s.page(prefix, from, pageSize)
		return items, more, nil
	}
	resp, err := t.get(prefix+from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(pageSize))
	if err != nil {
		return nil, false, err
	}
	items := make([]item, len(resp.Kvs))
	for i, e := range resp.Kvs {
		v := e.Value
		if v == nil {
			v = []byte{}
		}
		items[i] = item{string(e.Key[len(prefix):]), v}
	}
	return items, resp.More, nil
}

func (c *cursor) current() ([]byte, []byte) {
	if c.i >= len(c.items) {
		return nil, nil
	}
	e := c.items[c.i]
	return []byte(e.key), e.val
}

// First moves to the first entry of the bucket.
func (c *cursor) First() ([]byte, []byte) {
	c.load("")
	return c.current()
}

// Seek moves to the first entry whose key is at least key.
func (c *cursor) Seek(key []byte) ([]byte, []byte) {
	c.load(string(key))
	return c.current()
}

// Next moves to the next entry; nil at the end.
func (c *cursor) Next() ([]byte, []byte) {
	c.i++
	if c.i >= len(c.items) && c.more {
		c.load(c.next)
	}
	return c.current()
}

// Last moves to the last entry of the bucket (the audit head): the greatest
// key of etcd not deleted in the overlay, or of the overlay, whichever is
// greater.
func (c *cursor) Last() ([]byte, []byte) {
	t := c.b.t
	prefix := t.db.recordKey(c.b.name, "")
	o := t.overlay(c.b.name, false)
	var best *item
	if o != nil {
		o.Descend(func(w write) bool {
			if w.del {
				return true
			}
			best = &item{w.key, w.val}
			return false
		})
	}
	if _, ok := t.tops[c.b.name]; !ok {
		t.cachedTop(c.b.name, prefix)
	}
	if top, ok := t.tops[c.b.name]; ok {
		// etcd's greatest key at the snapshot is known: no read when the
		// overlay's is greater or it was not deleted (the usual case: an
		// audit append after another in the same transaction).
		switch {
		case top == nil || best != nil && best.key >= top.key:
			return best.pair()
		case o == nil:
			return top.pair()
		}
		if w, ok := o.Get(write{key: top.key}); !ok || !w.del {
			return top.pair()
		}
	}
	end := clientv3.GetPrefixRangeEnd(prefix)
	if top, ok := c.hinted(prefix, end, best); ok {
		return top.pair()
	}
	// The first page is one key: the head is rarely deleted in the overlay.
	limit := int64(1)
	for first := true; ; first = false {
		resp, err := t.get(prefix, clientv3.WithRange(end), clientv3.WithLimit(limit),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		if err != nil {
			return nil, nil
		}
		limit = pageSize
		if first {
			var top *item
			if len(resp.Kvs) > 0 {
				top = topItem(resp.Kvs[0], prefix)
				t.db.lastKeys.Store(c.b.name, top.key)
			}
			t.tops[c.b.name] = top
		}
		for _, e := range resp.Kvs {
			k := string(e.Key[len(prefix):])
			if best != nil && best.key >= k {
				break
			}
			if o != nil {
				if w, ok := o.Get(write{key: k}); ok && w.del {
					continue
				}
			}
			v := e.Value
			if v == nil {
				v = []byte{}
			}
			return []byte(k), v
		}
		if !resp.More || len(resp.Kvs) == 0 || (best != nil && string(resp.Kvs[len(resp.Kvs)-1].Key[len(prefix):]) <= best.key) {
			break
		}
		end = string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
	return best.pair()
}

// cachedTop notes the greatest entry of bucket at the snapshot in tops
// when the watch cache knows it: every bucket it holds in full, and the
// known head of an audit chain.
func (t *txn) cachedTop(bucket, prefix string) {
	s := t.start()
	switch {
	case s == nil || !cachedBucket(bucket) && !auditBucket(bucket):
		return
	case cachedBucket(bucket):
		t.tops[bucket] = s.top(prefix)
		return
	}
	switch h, ok := s.heads[bucket]; {
	case !ok:
		t.tops[bucket] = nil // no record at the snapshot
	case h.known:
		t.tops[bucket] = &item{h.key, h.val}
	}
}

// hinted finds the bucket's greatest key at the snapshot by reading only
// from the greatest key a direct Last of this DB found before
// (DB.lastKeys) to the end of the bucket: etcd answers a sorted range by
// reading all of it, and the whole of an audit chain grows forever, while
// the keys from the last head on are the few appended since. ok is false
// (and the caller reads the whole bucket) when there is no hint, the read
// fails, nothing is left from the hint on (the head was deleted behind
// the store's back) or the overlay decides (it deleted that key, or holds
// a greater one).
func (c *cursor) hinted(prefix, end string, best *item) (*item, bool) {
	t := c.b.t
	h, ok := t.db.lastKeys.Load(c.b.name)
	if !ok {
		return nil, false
	}
	resp, err := t.get(prefix+h.(string), clientv3.WithRange(end), clientv3.WithLimit(1),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil || len(resp.Kvs) == 0 {
		t.db.lastKeys.Delete(c.b.name)
		return nil, false
	}
	top := topItem(resp.Kvs[0], prefix)
	t.db.lastKeys.Store(c.b.name, top.key)
	t.tops[c.b.name] = top
	if best != nil && best.key >= top.key {
		return best, true
	}
	if o := t.overlay(c.b.name, false); o != nil {
		if w, ok := o.Get(write{key: top.key}); ok && w.del {
			return nil, false
		}
	}
	return top, true
}

// topItem is the entry of e, a key under prefix.
func topItem(e *mvccpb.KeyValue, prefix string) *item {
	top := &item{string(e.Key[len(prefix):]), e.Value}
	if top.val == nil {
		top.val = []byte{}
	}
	return top
}

// pair returns the entry as a cursor does; nil, nil for none.
func (e *item) pair() ([]byte, []byte) {
	if e == nil {
		return nil, nil
	}
	return []byte(e.key), e.val
}

// commit sends the overlay as one etcd Txn: if every key read still has
// the ModRevision it had at the snapshot (0 for a key read as absent, and
// for a key deleted since: equality, not "≤ rev", sees deletions) and the
// version key of every bucket read as a range and the fence key
// (DB.Fence) are unchanged since the snapshot, then every buffered write,
// a bump of the version key of every bucket written, and of the fence key
// in a fence. It reports
// false when the guard failed (another node or transaction wrote first).
func (t *txn) commit() (bool, error) {
	if ops, _ := t.size(); ops == 0 && !t.fence {
		// Nothing to write (or every write rolled back): what was read is
		// the snapshot's, a consistent state.
		return true, nil
	}
	var cmps []clientv3.Cmp
	if t.rev != 0 {
		for k, mod := range t.reads {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", mod))
		}
		for b := range t.ranged {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(t.db.versionKey(b)), "<", t.rev+1))
		}
		// No fence since the snapshot (DB.Fence).
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(t.db.versionKey(fenceBucket)), "<", t.rev+1))
	}
	var ops []clientv3.Op
	for name, o := range t.writes {
		if o.Len() == 0 {
			continue
		}
		o.Ascend(func(w write) bool {
			k := t.db.recordKey(name, w.key)
			if w.del {
				ops = append(ops, clientv3.OpDelete(k))
			} else {
				ops = append(ops, clientv3.OpPut(k, string(w.val)))
			}
			return true
		})
		ops = append(ops, clientv3.OpPut(t.db.versionKey(name), ""))
	}
	if t.fence {
		ops = append(ops, clientv3.OpPut(t.db.versionKey(fenceBucket), ""))
	}
	if err := t.ctx.Err(); err != nil {
		// Not sent: nothing can have applied.
		return false, err
	}
	ctx, cancel := t.db.requestContext(t.ctx)
	defer cancel()
	t.db.stats.commits.Add(1)
	resp, err := t.db.kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, t.db.lost(t.ctx, err)
	}
	if !resp.Succeeded {
		t.db.stats.conflicts.Add(1)
	}
	return resp.Succeeded, nil
}

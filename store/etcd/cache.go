package etcd

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The watch cache (doc.go, "The watch cache"): a copy of the store's
// records kept by an etcd watch, from which a transaction reads a snapshot
// instead of asking etcd for every key.

// loadPage is how many keys one read of a (re)load fetches.
const loadPage = 512

// maxLag bounds how long a transaction waits for the watch to apply the
// revision its barrier returned before it reads etcd directly; the watch
// is then restarted (it may follow a member cut off from the others).
const maxLag = time.Second

// rec is one record of the cache: its etcd key, value and ModRevision.
type rec struct {
	key string
	val []byte
	mod int64
}

func lessRec(a, b rec) bool { return a.key < b.key }

// head is what the cache knows of an audit bucket, which it does not copy:
// its greatest key (bucket-relative) with value and ModRevision. known is
// false once that key was deleted (only tampering does): the head is then
// unknown until a greater key is put, and Last reads etcd.
type head struct {
	key   string
	val   []byte
	mod   int64
	known bool
}

// auditBucket reports whether the cache keeps only the head of bucket: the
// audit chains "audit" and "audit.<node>", which grow forever and are read
// whole only by cursors (export, verify).
func auditBucket(name string) bool {
	return name == "audit" || strings.HasPrefix(name, "audit.")
}

// proofsBucket holds identity proof documents (up to store.MaxProofSize
// each), read one at a time by administrators: the cache keeps none of
// them, a transaction reads them from etcd at its snapshot.
const proofsBucket = "proofs"

// cachedBucket reports whether the cache holds every record of bucket:
// all buckets but the audit chains and the proofs.
func cachedBucket(name string) bool {
	return name != proofsBucket && !auditBucket(name)
}

// snapshot is the cache's state at one revision: immutable, shared by the
// transactions that start while it is current.
type snapshot struct {
	tree  *btree.BTreeG[rec]
	heads map[string]head // an audit bucket that is absent is empty
	rev   int64
}

// get returns the value (nil: absent) and ModRevision (0: absent) of key.
func (s *snapshot) get(key string) ([]byte, int64) {
	r, ok := s.tree.Get(rec{key: key})
	if !ok {
		return nil, 0
	}
	return r.val, r.mod
}

// page returns up to limit records whose keys start with prefix, from the
// key prefix+from on, and whether more follow: what a range read at the
// snapshot's revision answers.
func (s *snapshot) page(prefix, from string, limit int) (items []item, more bool) {
	s.tree.AscendGreaterOrEqual(rec{key: prefix + from}, func(r rec) bool {
		if !strings.HasPrefix(r.key, prefix) {
			return false
		}
		if len(items) == limit {
			more = true
			return false
		}
		items = append(items, item{r.key[len(prefix):], r.val})
		return true
	})
	return items, more
}

// top returns the greatest record of the bucket whose keys start with
// prefix (nil: empty).
func (s *snapshot) top(prefix string) *item {
	var top *item
	end := clientv3.GetPrefixRangeEnd(prefix)
	s.tree.DescendLessOrEqual(rec{key: end}, func(r rec) bool {
		if r.key >= end {
			return true
		}
		if strings.HasPrefix(r.key, prefix) {
			top = &item{r.key[len(prefix):], r.val}
		}
		return false
	})
	return top
}

// watchCache follows the store's prefix (doc.go, "The watch cache").
type watchCache struct {
	db      *DB // its kv reads the barrier
	client  *clientv3.Client
	kv      clientv3.KV
	prefix  string
	timeout time.Duration
	// barrier reads the revision of the store's last commit.
	barrier barrier

	// mu guards what follows: the watch applies events under it, a
	// transaction takes its snapshot under it.
	mu sync.Mutex
	// ready: tree, heads and applied follow etcd; false while (re)loading.
	ready   bool
	tree    *btree.BTreeG[rec]
	heads   map[string]head // replaced, never modified: snapshots share it
	applied int64
	// snap is the snapshot of applied, once a transaction took it.
	snap *snapshot
	// notify is closed (and replaced) when applied or ready changes.
	notify chan struct{}
	// restart cancels the current watch (the cache then reloads).
	restart context.CancelFunc

	stop    context.CancelFunc
	done    chan struct{}
	started chan struct{} // closed after the first load, loaded or not

	// beforeWatch, if set, runs after a load and before its watch starts
	// (tests: a change the watch must deliver, a compaction); beforeLoad
	// before each load (tests: hold a reload). Both under mu.
	beforeWatch func(rev int64)
	beforeLoad  func()
}

// newWatchCache returns the cache of db's prefix; start runs it.
func newWatchCache(db *DB) *watchCache {
	c := &watchCache{
		db: db, client: db.client, kv: clientv3.NewKV(db.client), prefix: db.prefix, timeout: db.timeout,
		notify: make(chan struct{}), done: make(chan struct{}), started: make(chan struct{}),
	}
	c.barrier.read = c.lastCommit
	return c
}

// start loads the cache and follows the watch in the background until
// close. It waits for the first load (at most the request timeout: the
// store serves transactions with direct reads until the cache is ready).
func (c *watchCache) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go c.run(ctx)
	select {
	case <-c.started:
	case <-time.After(c.timeout):
	}
}

// close stops the watch and waits for it.
func (c *watchCache) close() {
	c.stop()
	<-c.done
}

// run loads the cache and applies the watch until it breaks, then reloads
// (with a growing pause, up to a second, while loads fail or watches break
// at once), until ctx ends.
func (c *watchCache) run(ctx context.Context) {
	defer close(c.done)
	var once sync.Once
	started := func() { once.Do(func() { close(c.started) }) }
	for failures := 0; ctx.Err() == nil; {
		c.mu.Lock()
		hook := c.beforeLoad
		c.mu.Unlock()
		if hook != nil {
			hook()
		}
		began := time.Now()
		err := c.follow(ctx, started)
		started()
		c.setReady(false)
		// A watch that breaks as soon as it starts counts as a failed
		// load: no loop of loads of the whole store.
		if err == nil && time.Since(began) > time.Second {
			failures = 0
		} else {
			failures++
		}
		pause := time.NewTimer(time.Duration(min(failures, 20)) * 50 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-pause.C:
		}
		pause.Stop()
	}
}

// follow loads the cache at one revision, marks it ready, calls loaded and
// applies the watch from the next revision on until it breaks (closed,
// canceled, compacted, no leader, restarted by a transaction that waited
// too long). It returns the load's error, nil when it loaded.
func (c *watchCache) follow(ctx context.Context, loaded func()) error {
	tree, heads, rev, err := c.load(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	hook := c.beforeWatch
	c.mu.Unlock()
	if hook != nil {
		hook(rev)
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	w := clientv3.NewWatcher(c.client)
	defer w.Close()
	ch := w.Watch(wctx, c.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	c.mu.Lock()
	c.tree, c.heads, c.applied, c.snap, c.restart = tree, heads, rev, nil, cancel
	c.mu.Unlock()
	c.setReady(true)
	loaded()
	for resp := range ch {
		if resp.Canceled || resp.CompactRevision != 0 || resp.Err() != nil {
			return nil
		}
		if len(resp.Events) > 0 {
			c.apply(resp.Events)
		}
	}
	return nil
}

// load reads the store's records at one revision (the first read's): every
// record in full but the audit chains' (their heads) and the proof
// documents' (none).
func (c *watchCache) load(ctx context.Context) (*btree.BTreeG[rec], map[string]head, int64, error) {
	tree := btree.NewG(32, lessRec)
	heads := map[string]head{}
	records := c.prefix + "r/"
	proofs := records + proofsBucket + "/"
	var rev int64
	limit := int64(loadPage)
	// Two ranges: the records before the proofs and those after.
	for _, r := range [][2]string{{records, proofs}, {clientv3.GetPrefixRangeEnd(proofs), clientv3.GetPrefixRangeEnd(records)}} {
		for from, end := r[0], r[1]; from < end; {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(limit)}
			if rev != 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			resp, err := c.get(ctx, from, opts...)
			if status.Code(err) == codes.ResourceExhausted && limit > 1 {
				// A page of large records beyond the client's message
				// size: smaller pages (one record always fits).
				limit /= 2
				continue
			}
			if err != nil {
				return nil, nil, 0, err
			}
			if rev == 0 {
				rev = resp.Header.Revision
			}
			next := ""
			for _, kv := range resp.Kvs {
				k := string(kv.Key)
				name, _ := c.bucketOf(k)
				if auditBucket(name) {
					// Its head only; the next read starts after the bucket.
					prefix := records + name + "/"
					h, err := c.loadHead(ctx, prefix, rev)
					if err != nil {
						return nil, nil, 0, err
					}
					if h != nil {
						heads[name] = *h
					}
					next = clientv3.GetPrefixRangeEnd(prefix)
					break
				}
				tree.ReplaceOrInsert(record(kv))
			}
			switch {
			case next != "":
				from = next
			case resp.More && len(resp.Kvs) > 0:
				from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
			default:
				from = end
			}
		}
	}
	return tree, heads, rev, nil
}

// loadHead reads the greatest key of the audit bucket under prefix at rev
// (nil: the bucket is empty). etcd answers a sorted range by reading the
// whole range, which for a chain of millions of entries is a load on
// etcd; so the chain's sequence numbers (8-byte big-endian keys) are
// searched instead: "is there a key from seq s on" is one ascending read
// of one key, and about 2·log2(length) of them find the greatest s that
// has one. The keys from there on are then few (one, unless tampered
// with) and are read sorted.
func (c *watchCache) loadHead(ctx context.Context, prefix string, rev int64) (*head, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := func(seq uint64) string {
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], seq)
		return prefix + string(k[:])
	}
	exists := func(seq uint64) (bool, error) {
		resp, err := c.get(ctx, from(seq), clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly(),
			clientv3.WithRev(rev))
		return err == nil && len(resp.Kvs) > 0, err
	}
	start := prefix // no key from seq 0 on: only keys shorter than 8 bytes
	ok, err := exists(0)
	if err != nil {
		return nil, err
	}
	if ok {
		// exists(lo) holds; exists(hi) does not, unless hi = lo = max.
		lo, hi := uint64(0), uint64(1)
		for lo != math.MaxUint64 {
			ok, err := exists(hi)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			lo = hi
			if hi >= 1<<63 {
				hi = math.MaxUint64
			} else {
				hi *= 2
			}
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			ok, err := exists(mid)
			if err != nil {
				return nil, err
			}
			if ok {
				lo = mid
			} else {
				hi = mid
			}
		}
		start = from(lo)
	}
	resp, err := c.get(ctx, start, clientv3.WithRange(end), clientv3.WithLimit(1),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithRev(rev))
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	r := record(resp.Kvs[0])
	return &head{key: r.key[len(prefix):], val: r.val, mod: r.mod, known: true}, nil
}

// get is one read of a load, bounded as every etcd request.
func (c *watchCache) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := c.db.requestContext(ctx)
	defer cancel()
	return c.kv.Get(ctx, key, opts...)
}

// record is the cache's copy of a key-value (a value is never nil).
func record(kv *mvccpb.KeyValue) rec {
	v := kv.Value
	if v == nil {
		v = []byte{}
	}
	return rec{key: string(kv.Key), val: v, mod: kv.ModRevision}
}

// bucketOf returns the bucket of a record's etcd key; false for the keys
// that are not records (version keys, the sweeper election).
func (c *watchCache) bucketOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, c.prefix+"r/")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "/")
	return name, ok
}

// apply applies the events of one watch response: whole revisions, in
// order (etcd sends every event of a revision in one response).
func (c *watchCache) apply(events []*clientv3.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var heads map[string]head // copied on the first change
	rev := c.applied
	for _, ev := range events {
		rev = max(rev, ev.Kv.ModRevision)
		k := string(ev.Kv.Key)
		name, ok := c.bucketOf(k)
		if !ok {
			continue
		}
		if name == proofsBucket {
			continue
		}
		if !auditBucket(name) {
			if ev.Type == clientv3.EventTypeDelete {
				c.tree.Delete(rec{key: k})
			} else {
				c.tree.ReplaceOrInsert(record(ev.Kv))
			}
			continue
		}
		if heads == nil {
			heads = make(map[string]head, len(c.heads)+1)
			for b, h := range c.heads {
				heads[b] = h
			}
		}
		key := k[len(c.prefix)+len("r/")+len(name)+1:]
		h, had := heads[name]
		switch {
		case ev.Type == clientv3.EventTypeDelete:
			if had && key == h.key {
				h.known = false
			}
		case !had || key >= h.key:
			// Every key of the bucket is below the head, deleted or not.
			r := record(ev.Kv)
			h = head{key: key, val: r.val, mod: r.mod, known: true}
		}
		heads[name] = h
	}
	if heads != nil {
		c.heads = heads
	}
	if rev > c.applied {
		c.applied, c.snap = rev, nil
		close(c.notify)
		c.notify = make(chan struct{})
	}
}

// setReady marks the cache ready or not and wakes the waiting
// transactions.
func (c *watchCache) setReady(ready bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready = ready
	if !ready {
		c.tree, c.heads, c.snap, c.restart = nil, nil, nil, nil
	}
	close(c.notify)
	c.notify = make(chan struct{})
}

// isReady reports whether the cache follows etcd.
func (c *watchCache) isReady() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// begin returns the snapshot a transaction starting now reads and the
// revision it reads at, after a barrier: the cache has applied every
// commit made to the store before the transaction began. nil (and no
// error) when the cache is not ready or lags: the transaction reads etcd
// directly. A failed barrier is the error.
func (c *watchCache) begin(ctx context.Context) (*snapshot, int64, error) {
	if !c.isReady() {
		return nil, 0, nil
	}
	last, now, err := c.barrier.wait(ctx)
	if err != nil {
		return nil, 0, err
	}
	s := c.await(ctx, last)
	if s == nil {
		return nil, 0, nil
	}
	// The store did not change between its last commit and now: the
	// snapshot is the state at both, and reads of etcd (audit cursors) at
	// the later one are not compacted away under an idle store.
	return s, max(s.rev, now), nil
}

// await waits until the cache has applied rev and returns its snapshot;
// nil if the cache is not ready, ctx ends, or the watch lags more than
// maxLag (it is then restarted).
func (c *watchCache) await(ctx context.Context, rev int64) *snapshot {
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		if !c.ready {
			c.mu.Unlock()
			return nil
		}
		if c.applied >= rev {
			if c.snap == nil {
				c.snap = &snapshot{tree: c.tree.Clone(), heads: c.heads, rev: c.applied}
			}
			s := c.snap
			c.mu.Unlock()
			return s
		}
		notify := c.notify
		c.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(min(maxLag, c.timeout))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-notify:
		case <-ctx.Done():
			return nil
		case <-timeout:
			c.mu.Lock()
			if c.restart != nil {
				c.restart()
			}
			c.mu.Unlock()
			return nil
		}
	}
}

// lastCommit is the barrier's read: linearizable, the greatest ModRevision
// of the store's version keys (every commit puts one: the revision of the
// store's last commit; 0 for an empty store) and the revision of the
// cluster when it answered.
func (c *watchCache) lastCommit(ctx context.Context) (last, now int64, err error) {
	ctx, cancel := c.db.requestContext(ctx)
	defer cancel()
	c.db.stats.barriers.Add(1)
	resp, err := c.db.kv.Get(ctx, c.prefix+"v/", clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Kvs) > 0 {
		last = resp.Kvs[0].ModRevision
	}
	return last, resp.Header.Revision, nil
}

package etcd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/store"
)

// reqKV counts the etcd requests of a DB's transactions: reads (Get) and
// commits (Txn), and keeps the key of every read.
type reqKV struct {
	clientv3.KV
	gets, txns atomic.Int32
	mu         sync.Mutex
	keys       []string
}

func (k *reqKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.gets.Add(1)
	k.mu.Lock()
	k.keys = append(k.keys, key)
	k.mu.Unlock()
	return k.KV.Get(ctx, key, opts...)
}

func (k *reqKV) Txn(ctx context.Context) clientv3.Txn {
	k.txns.Add(1)
	return k.KV.Txn(ctx)
}

// count replaces db's KV by a counting one (before any transaction runs
// on it concurrently) and returns it.
func count(db *DB) *reqKV {
	k := &reqKV{KV: db.kv}
	db.kv = k
	return k
}

// signHashFixture stores what a signHash reads: user alice, client rp,
// credential cred-1 and n SADs, and returns the SADs' hashes.
func signHashFixture(t *testing.T, db *DB, n int) [][]byte {
	t.Helper()
	var sads [][]byte
	err := db.Update(context.Background(), func(tx store.Tx) error {
		sads = nil
		if err := tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive}); err != nil {
			return err
		}
		if err := tx.CreateClient(&store.Client{ID: "rp", Name: "RP", SecretHash: store.HashSecret("secret"), RedirectURIs: []string{"https://rp.example.com/cb"}, Scopes: []string{"credential"}}); err != nil {
			return err
		}
		err := tx.CreateCredential(&store.Credential{ID: "cred-1", Owner: "alice", KeyID: []byte("key-1"),
			Algorithm: store.AlgRSA2048, KeyBits: 2048, Status: store.CredentialPending})
		if err != nil {
			return err
		}
		for i := range n {
			sad := store.Fingerprint(fmt.Sprint("sad-", i))
			err := tx.CreateToken(&store.Token{Hash: sad, Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
				CredentialID: "cred-1", Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: time.Now().Add(time.Hour)})
			if err != nil {
				return err
			}
			sads = append(sads, sad)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sads
}

// signHash is a granted signHash's transaction: read the SAD, the
// credential, the client and the user, consume the SAD, append the audit
// entry.
func signHash(tx store.Tx, sad []byte) error {
	tok, err := tx.Token(sad)
	if err != nil {
		return err
	}
	if _, err := tx.Credential(tok.CredentialID); err != nil {
		return err
	}
	if _, err := tx.Client(tok.ClientID); err != nil {
		return err
	}
	if _, err := tx.User(tok.Username); err != nil {
		return err
	}
	if err := tx.DeleteToken(sad); err != nil {
		return err
	}
	return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: tok.Username, Client: tok.ClientID,
		Credential: tok.CredentialID, Outcome: store.AuditGranted})
}

// TestCacheRequests: with the watch cache, a signHash's transaction costs
// one etcd read (the barrier) and one Txn, whatever it reads, and a View
// one read; without it, every read is a request.
func TestCacheRequests(t *testing.T) {
	endpoints := startEmbedded(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		opts  Options
		check func(gets int32) bool
		want  string
	}{
		{"cache", Options{}, func(gets int32) bool { return gets == 1 }, "1"},
		{"no cache", Options{NoCache: true}, func(gets int32) bool { return gets > 4 }, "one per record read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Endpoints, tc.opts.Prefix = endpoints, "/"+tc.name+"/"
			db, err := Open(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			sads := signHashFixture(t, db, 3)
			// A first signHash appends to an empty chain, the second to a
			// head the cache learnt from the watch.
			for i, sad := range sads[:2] {
				k := count(db)
				if err := db.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sad) }); err != nil {
					t.Fatal(err)
				}
				gets, txns := k.gets.Load(), k.txns.Load()
				t.Logf("signHash %d: %d reads, %d Txn", i, gets, txns)
				if !tc.check(gets) || txns != 1 {
					t.Errorf("signHash %d: %d reads and %d Txn, want %s and 1", i, gets, txns, tc.want)
				}
				db.kv = k.KV
			}
			k := count(db)
			err = db.View(ctx, func(tx store.Tx) error {
				if _, err := tx.Token(sads[2]); err != nil {
					return err
				}
				_, err := tx.User("alice")
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if gets, txns := k.gets.Load(), k.txns.Load(); (tc.opts.NoCache && gets != 2 || !tc.opts.NoCache && gets != 1) || txns != 0 {
				t.Errorf("View: %d reads, %d Txn", gets, txns)
			}
			db.kv = k.KV
			verifyAudit(t, db, 2)
		})
	}
}

// verifyAudit checks the audit chain and its length.
func verifyAudit(t *testing.T, db *DB, n uint64) {
	t.Helper()
	err := db.View(context.Background(), func(tx store.Tx) error {
		size, _, err := store.VerifyAudit(tx)
		if err == nil && size != n {
			err = fmt.Errorf("%d entries, want %d", size, n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCacheStale: a transaction reads the cache's snapshot; another node
// writes what it read before it commits. The commit conflicts and the
// function runs again after a new barrier, on the other node's write,
// which it builds on. A cache that missed a write (here, a record put
// back to its old value and ModRevision, as a lost watch event would
// leave it) never commits over it: every attempt conflicts.
func TestCacheStale(t *testing.T) {
	endpoints := startEmbedded(t)
	ctx := context.Background()
	a, err := Open(ctx, Options{Endpoints: endpoints, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, Options{Endpoints: endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	signHashFixture(t, a, 0)
	bump := func(db *DB, then func(run int)) error {
		runs := 0
		return db.Update(ctx, func(tx store.Tx) error {
			runs++
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			then(runs)
			u.FailedPINs++
			return tx.PutUser(u)
		})
	}
	k := count(a)
	runs := 0
	err = bump(a, func(run int) {
		runs = run
		if run == 1 {
			if err := bump(b, func(int) {}); err != nil {
				t.Error(err)
			}
		}
	})
	a.kv = k.KV
	if err != nil || runs != 2 {
		t.Fatalf("Update = %v after %d runs, want nil after 2", err, runs)
	}
	// Two barriers and two Txns: both runs read the cache.
	if gets, txns := k.gets.Load(), k.txns.Load(); gets != 2 || txns != 2 {
		t.Errorf("%d reads, %d Txns: want 2 and 2", gets, txns)
	}
	if got := pins(t, b); got != 2 {
		t.Fatalf("FailedPINs = %d, want 2: no increment lost", got)
	}

	// Make a's cache miss b's next write.
	c := a.cache
	key := a.recordKey("users", "alice")
	c.mu.Lock()
	old, _ := c.tree.Get(rec{key: key})
	c.mu.Unlock()
	if err := bump(b, func(int) {}); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, key, old.mod)
	c.mu.Lock()
	c.tree.ReplaceOrInsert(old)
	c.snap = nil
	c.mu.Unlock()
	runs = 0
	err = bump(a, func(run int) { runs = run })
	if !errors.Is(err, ErrConflict) || runs != 3 {
		t.Fatalf("Update on a stale cache = %v after %d runs, want ErrConflict after 3", err, runs)
	}
	if got := pins(t, b); got != 3 {
		t.Fatalf("FailedPINs = %d, want 3: the stale commit wrote nothing", got)
	}
}

// waitApplied waits until the cache holds key at a ModRevision other
// than mod.
func waitApplied(t *testing.T, c *watchCache, key string, mod int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		r, _ := c.tree.Get(rec{key: key})
		c.mu.Unlock()
		if r.mod != mod {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch did not deliver the write")
		}
	}
}

func pins(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.View(context.Background(), func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err == nil {
			n = u.FailedPINs
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCacheWatchBreak: when the watch breaks, the cache reloads in the
// background and transactions meanwhile read etcd directly, seeing every
// write (this node's and another's); after the reload they read the cache
// again. A compaction of the revisions the new watch starts from breaks
// it at once: the cache loads again, at a later revision.
func TestCacheWatchBreak(t *testing.T) {
	endpoints := startEmbedded(t)
	ctx := context.Background()
	a, err := Open(ctx, Options{Endpoints: endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, Options{Endpoints: endpoints, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sads := signHashFixture(t, a, 6)
	c := a.cache
	hold := make(chan struct{})
	var loads atomic.Int32
	c.mu.Lock()
	c.beforeLoad = func() {
		loads.Add(1)
		<-hold
	}
	c.mu.Unlock()

	// Break the watch (as a lagging watch is restarted).
	c.mu.Lock()
	c.restart()
	c.mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); loads.Load() == 0 || c.isReady(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cache did not start reloading")
		}
	}
	// Reloading: a's transactions read etcd, and see b's writes.
	k := count(a)
	for i, sad := range sads[:2] {
		if err := b.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sad) }); err != nil {
			t.Fatal(err)
		}
		if err := a.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sad) }); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("signHash %d on a, reloading, of a SAD b consumed = %v, want ErrNotFound", i, err)
		}
		if err := a.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sads[i+2]) }); err != nil {
			t.Fatal(err)
		}
		if err := b.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sads[i+2]) }); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("signHash %d on b of a SAD a consumed = %v, want ErrNotFound", i, err)
		}
	}
	if gets := k.gets.Load(); gets <= 4 {
		t.Errorf("%d reads for 4 transactions while reloading: the cache answered", gets)
	}
	a.kv = k.KV

	// Release the reload; b consumes a SAD and compacts etcd before its
	// watch starts: the watch fails, the cache loads again.
	c.mu.Lock()
	c.beforeWatch = func(int64) {
		c.mu.Lock()
		c.beforeWatch = nil
		c.mu.Unlock()
		if err := b.Update(ctx, func(tx store.Tx) error { return signHash(tx, sads[4]) }); err != nil {
			t.Error(err)
		}
		if err := b.Update(ctx, func(tx store.Tx) error {
			return tx.CreateUser(&store.User{ID: "id-bob", Username: "bob", Status: store.UserActive})
		}); err != nil {
			t.Error(err)
		}
		// The watch starts after the load's revision, which the two
		// commits have compacted away.
		resp, err := b.client.Get(ctx, "compact")
		if err == nil {
			_, err = b.client.Compact(ctx, resp.Header.Revision)
		}
		if err != nil {
			t.Error(err)
		}
	}
	c.mu.Unlock()
	close(hold)
	for deadline := time.Now().Add(30 * time.Second); loads.Load() < 2 || !c.isReady(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cache did not reload: %d loads", loads.Load())
		}
	}
	if err := a.View(ctx, func(tx store.Tx) error { _, err := tx.Token(sads[4]); return err }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a reads the SAD b consumed before the compaction: %v", err)
	}
	if err := a.View(ctx, func(tx store.Tx) error { _, err := tx.User("bob"); return err }); err != nil {
		t.Fatalf("a does not read the user b created before the compaction: %v", err)
	}
	k = count(a)
	if err := a.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sads[5]) }); err != nil {
		t.Fatal(err)
	}
	if gets, txns := k.gets.Load(), k.txns.Load(); gets != 1 || txns != 1 {
		t.Errorf("after the reload: %d reads, %d Txn, want 1 and 1 (the cache serves again)", gets, txns)
	}
	a.kv = k.KV
	verifyAudit(t, a, 6)
}

// TestCacheAuditHeadDeleted: the cache keeps only the head of an audit
// chain. When the head is deleted behind the store's back (tampering: no
// version key moves), the cache no longer knows the head and an append
// reads it from etcd, as without the cache: it follows the entry that is
// now the last, and the chain verifies. Trusting the deleted head would
// leave a gap.
func TestCacheAuditHeadDeleted(t *testing.T) {
	endpoints := startEmbedded(t)
	ctx := context.Background()
	db, err := Open(ctx, Options{Endpoints: endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sads := signHashFixture(t, db, 4)
	for _, sad := range sads[:3] {
		if err := db.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sad) }); err != nil {
			t.Fatal(err)
		}
	}
	head := db.recordKey("audit", string([]byte{0, 0, 0, 0, 0, 0, 0, 3}))
	resp, err := db.client.Delete(ctx, head)
	if err != nil || resp.Deleted != 1 {
		t.Fatalf("delete the head: %v, %v", resp, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		db.cache.mu.Lock()
		applied := db.cache.applied
		db.cache.mu.Unlock()
		if applied >= resp.Header.Revision {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch did not deliver the deletion")
		}
	}
	if err := db.Batch(ctx, func(tx store.Tx) error { return signHash(tx, sads[3]) }); err != nil {
		t.Fatal(err)
	}
	verifyAudit(t, db, 3)
	// The new head is known again: the next append reads no etcd record.
	k := count(db)
	if err := db.Update(ctx, func(tx store.Tx) error {
		return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, Outcome: store.AuditGranted})
	}); err != nil {
		t.Fatal(err)
	}
	db.kv = k.KV
	if gets := k.gets.Load(); gets != 1 {
		t.Errorf("append after the head came back: %d reads, want 1 (the barrier)", gets)
	}
	verifyAudit(t, db, 4)
}

// TestCacheLoadHead: the cache finds an audit chain's head by searching
// its sequence numbers, in about 2·log2(length) one-key reads instead of
// one sorted read (which etcd answers by reading the whole chain): for
// chains of every length, with gaps, and with keys of other lengths (as
// tampering leaves them), the head is the greatest key, as a sorted read
// answers.
func TestCacheLoadHead(t *testing.T) {
	db := openEmbedded(t, Options{NoCache: true})
	ctx := context.Background()
	c := newWatchCache(db)
	seq := func(s uint64) string {
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], s)
		return string(k[:])
	}
	for i, tc := range []struct {
		name string
		keys []string
	}{
		{"one entry", []string{seq(1)}},
		{"seq 0", []string{seq(0)}},
		{"1000 entries", func() (ks []string) {
			for s := range uint64(1000) {
				ks = append(ks, seq(s+1))
			}
			return ks
		}()},
		{"gaps", []string{seq(3), seq(17), seq(1 << 40)}},
		{"greatest sequence number", []string{seq(5), seq(math.MaxUint64)}},
		{"top bit", []string{seq(1<<63 + 5)}},
		{"a longer key after the head", []string{seq(1), seq(2), seq(2) + "x"}},
		{"only short keys", []string{"\x01", "\x02\x03"}},
		{"short and long keys", []string{"\x01", seq(9), "\xff"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := db.recordKey(fmt.Sprintf("audit.t%d", i), "")
			for lo := 0; lo < len(tc.keys); lo += 100 {
				var ops []clientv3.Op
				for _, k := range tc.keys[lo:min(lo+100, len(tc.keys))] {
					ops = append(ops, clientv3.OpPut(prefix+k, "v-"+k))
				}
				if _, err := db.client.Txn(ctx).Then(ops...).Commit(); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := db.client.Get(ctx, prefix, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(1),
				clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
			if err != nil {
				t.Fatal(err)
			}
			want := string(resp.Kvs[0].Key[len(prefix):])
			k := &reqKV{KV: c.kv}
			c.kv = k
			h, err := c.loadHead(ctx, prefix, resp.Header.Revision)
			c.kv = k.KV
			if err != nil {
				t.Fatal(err)
			}
			if h == nil || h.key != want || string(h.val) != "v-"+want || h.mod != resp.Kvs[0].ModRevision || !h.known {
				t.Fatalf("head %+v, want key %x", h, want)
			}
			t.Logf("%d keys: %d reads", len(tc.keys), k.gets.Load())
			if got := k.gets.Load(); got > 2*64+2 || len(tc.keys) == 1000 && got > 2*10+3 {
				t.Errorf("%d reads", got)
			}
		})
	}
}

// TestCacheLoadLarge: a store whose records do not fit one message of the
// client loads in smaller pages (a page of large records failed, the cache
// would never be ready); the proof documents (up to 10 MiB each) are not
// loaded at all: a proof is read from etcd at the snapshot.
func TestCacheLoadLarge(t *testing.T) {
	endpoints := startEmbedded(t)
	ctx := context.Background()
	setup, err := Open(ctx, Options{Endpoints: endpoints, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	signHashFixture(t, setup, 0)
	big := bytes.Repeat([]byte{0xa5}, 1400<<10) // etcd's default request limit is 1.5 MiB
	for i := range 10 {
		if _, err := setup.client.Put(ctx, setup.recordKey("meta", fmt.Sprint("big-", i)), string(big)); err != nil {
			t.Fatal(err)
		}
	}
	proof := store.Proof{ProofRef: store.ProofRef{ID: "p1", ContentType: store.ProofPDF}, Content: big}
	if err := setup.Update(ctx, func(tx store.Tx) error { return tx.PutProof("alice", proof) }); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, Options{Endpoints: endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.cache.isReady() {
		t.Fatal("the cache did not load")
	}
	db.cache.mu.Lock()
	s := &snapshot{tree: db.cache.tree.Clone()}
	db.cache.mu.Unlock()
	if proofs, _ := s.page(db.recordKey(proofsBucket, ""), "", 10); len(proofs) != 0 {
		t.Errorf("the cache holds %d proofs", len(proofs))
	}
	for i := range 10 {
		if v, _ := s.get(db.recordKey("meta", fmt.Sprint("big-", i))); !bytes.Equal(v, big) {
			t.Fatalf("the cache lacks record %d", i)
		}
	}
	k := count(db)
	err = db.View(ctx, func(tx store.Tx) error {
		p, err := tx.Proof("alice", "p1")
		if err == nil && !bytes.Equal(p.Content, big) {
			err = errors.New("proof content differs")
		}
		return err
	})
	db.kv = k.KV
	if err != nil {
		t.Fatal(err)
	}
	// The barrier, and the proof's content (the user from the cache).
	if gets := k.gets.Load(); gets != 2 {
		t.Errorf("reading a proof: %d reads, want 2", gets)
	}
}

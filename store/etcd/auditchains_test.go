package etcd_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
)

// chainNodes opens one DB per name on one fresh prefix: nodes of one
// cluster, each appending to its own audit chain.
func chainNodes(t *testing.T, names ...string) []*etcd.DB {
	t.Helper()
	prefix := server.Prefix()
	dbs := make([]*etcd.DB, len(names))
	for i, n := range names {
		dbs[i] = open(t, etcd.Options{Prefix: prefix, Node: n})
	}
	return dbs
}

// appendAudit appends n entries through db, user naming the node.
func appendAudit(t *testing.T, db *etcd.DB, user string, n int) {
	t.Helper()
	for i := range n {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: user, Client: "rp",
				Hashes: []string{fmt.Sprintf("%064x", i)}, Outcome: store.AuditGranted})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// rawClient is a client of the package's server for tests that write
// etcd keys as an intruder with access to the cluster would.
func rawClient(t *testing.T) *clientv3.Client {
	t.Helper()
	c, err := server.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// entryKey is the etcd key of entry seq of chain ("" or a node's).
func entryKey(db *etcd.DB, chain string, seq uint64) string {
	bucket := "audit"
	if chain != "" {
		bucket += "." + chain
	}
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return db.Prefix() + "r/" + bucket + "/" + string(k[:])
}

func getRaw(t *testing.T, c *clientv3.Client, key string) []byte {
	t.Helper()
	resp, err := c.Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get %q: %v (%d keys)", key, err, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

func putRaw(t *testing.T, c *clientv3.Client, key string, val []byte) {
	t.Helper()
	if _, err := c.Put(context.Background(), key, string(val)); err != nil {
		t.Fatal(err)
	}
}

func deleteRaw(t *testing.T, c *clientv3.Client, key string, opts ...clientv3.OpOption) {
	t.Helper()
	if _, err := c.Delete(context.Background(), key, opts...); err != nil {
		t.Fatal(err)
	}
}

// verifyChains runs VerifyAuditChains and VerifyAudit through db.
func verifyChains(t *testing.T, db *etcd.DB) ([]store.AuditChainHead, uint64, []byte, error) {
	t.Helper()
	var heads []store.AuditChainHead
	var n uint64
	var head []byte
	var verr error
	err := db.View(context.Background(), func(tx store.Tx) error {
		heads, verr = store.VerifyAuditChains(tx)
		var err2 error
		n, head, err2 = store.VerifyAudit(tx)
		if (verr == nil) != (err2 == nil) {
			t.Errorf("VerifyAuditChains = %v, VerifyAudit = %v", verr, err2)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return heads, n, head, verr
}

// wantBroken checks that err is an *AuditBrokenError at chain and seq.
func wantBroken(t *testing.T, err error, chain string, seq uint64) {
	t.Helper()
	var be *store.AuditBrokenError
	if !errors.As(err, &be) || be.Chain != chain || be.Seq != seq {
		t.Fatalf("verify = %v, want broken at entry %d of chain %q", err, seq, chain)
	}
	t.Logf("detected: %v", err)
}

// TestAuditChainsPerNode: two nodes with different names on one store
// append to a chain each ("audit.n1", "audit.n2"); every entry seals its
// chain and the snapshot revision of its transaction; each node verifies
// every chain; reading the log merges the chains in cluster order.
func TestAuditChainsPerNode(t *testing.T) {
	dbs := chainNodes(t, "n1", "n2")
	for round := range 3 {
		appendAudit(t, dbs[0], "node1", 2+round)
		appendAudit(t, dbs[1], "node2", 1)
	}
	var firstHead []byte
	for i, db := range dbs {
		heads, n, head, err := verifyChains(t, db)
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		if len(heads) != 3 || heads[0].Chain != "" || heads[0].Size != 0 ||
			heads[1].Chain != "n1" || heads[1].Size != 9 || heads[2].Chain != "n2" || heads[2].Size != 3 {
			t.Fatalf("node %d: chains %+v, want \"\" 0, n1 9, n2 3", i+1, heads)
		}
		if n != 12 || !bytesEqual(head, store.AuditHeadsDigest(heads[1:])) {
			t.Fatalf("node %d: VerifyAudit = %d, %x", i+1, n, head)
		}
		if firstHead == nil {
			firstHead = head
		} else if !bytesEqual(head, firstHead) {
			t.Fatalf("node %d sees head %x, node 1 %x", i+1, head, firstHead)
		}
	}
	var got []*store.AuditEntry
	err := dbs[1].View(context.Background(), func(tx store.Tx) error {
		if n, err := tx.AuditSize(); err != nil || n != 12 {
			t.Errorf("AuditSize = %d, %v; want 12", n, err)
		}
		if n, err := tx.AuditChainSize("n2"); err != nil || n != 3 {
			t.Errorf("AuditChainSize(n2) = %d, %v; want 3", n, err)
		}
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error { got = append(got, e); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 {
		t.Fatalf("AuditEntries: %d entries, want 12", len(got))
	}
	// Node 1's appends of a round precede node 2's: the merge shows them
	// so, by revision.
	var order string
	for i, e := range got {
		if e.Rev <= 0 || e.Chain != map[string]string{"node1": "n1", "node2": "n2"}[e.User] {
			t.Fatalf("entry %d: chain %q rev %d by %s", i, e.Chain, e.Rev, e.User)
		}
		if i > 0 && e.Rev < got[i-1].Rev {
			t.Fatalf("entry %d: rev %d after %d", i, e.Rev, got[i-1].Rev)
		}
		order += e.Chain[1:]
	}
	if order != "112111211112" {
		t.Fatalf("merged order of chains %s, want 112111211112", order)
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// TestAuditChainsTamper: what an intruder with write access to etcd does
// to one node's chain is detected by every node's verification.
func TestAuditChainsTamper(t *testing.T) {
	c := rawClient(t)
	setup := func(t *testing.T) []*etcd.DB {
		dbs := chainNodes(t, "n1", "n2")
		appendAudit(t, dbs[0], "node1", 5)
		appendAudit(t, dbs[1], "node2", 4)
		if _, _, _, err := verifyChains(t, dbs[1]); err != nil {
			t.Fatal(err)
		}
		return dbs
	}
	t.Run("DeletedInTheMiddle", func(t *testing.T) {
		dbs := setup(t)
		deleteRaw(t, c, entryKey(dbs[0], "n1", 3))
		_, _, _, err := verifyChains(t, dbs[1])
		wantBroken(t, err, "n1", 3)
	})
	t.Run("Reordered", func(t *testing.T) {
		dbs := setup(t)
		a, b := getRaw(t, c, entryKey(dbs[0], "n2", 2)), getRaw(t, c, entryKey(dbs[0], "n2", 3))
		putRaw(t, c, entryKey(dbs[0], "n2", 2), b)
		putRaw(t, c, entryKey(dbs[0], "n2", 3), a)
		_, _, _, err := verifyChains(t, dbs[0])
		wantBroken(t, err, "n2", 2)
	})
	t.Run("CopiedIntoAnotherChain", func(t *testing.T) {
		// Chain n1's first two entries become chain n3's, registered:
		// seq, prev and digest hold; only the sealed chain tells.
		dbs := setup(t)
		putRaw(t, c, dbs[0].Prefix()+"r/audit_chains/n3", []byte(`{"created":"2030-01-01T00:00:00Z"}`))
		for seq := uint64(1); seq <= 2; seq++ {
			putRaw(t, c, entryKey(dbs[0], "n3", seq), getRaw(t, c, entryKey(dbs[0], "n1", seq)))
		}
		_, _, _, err := verifyChains(t, dbs[1])
		wantBroken(t, err, "n3", 1)
		// Into chain "", the chain of nodes without a name, likewise.
		deleteRaw(t, c, dbs[0].Prefix()+"r/audit.n3/", clientv3.WithPrefix())
		deleteRaw(t, c, dbs[0].Prefix()+"r/audit_chains/n3")
		putRaw(t, c, entryKey(dbs[0], "", 1), getRaw(t, c, entryKey(dbs[0], "n2", 1)))
		_, _, _, err = verifyChains(t, dbs[1])
		wantBroken(t, err, "", 1)
	})
	t.Run("RevisionGoesBack", func(t *testing.T) {
		// Entry 2 of n1 re-sealed (as with the chain recomputed after it) with
		// a revision below entry 1's: out of cluster order.
		dbs := setup(t)
		var e1, e2 *store.AuditEntry
		for seq, dst := range map[uint64]**store.AuditEntry{1: &e1, 2: &e2} {
			e, err := store.DecodeAuditEntry(getRaw(t, c, entryKey(dbs[0], "n1", seq)))
			if err != nil {
				t.Fatal(err)
			}
			*dst = e
		}
		e2.Rev = e1.Rev - 1
		raw, err := store.SealAudit(e2, 2, e1.Digest)
		if err != nil {
			t.Fatal(err)
		}
		putRaw(t, c, entryKey(dbs[0], "n1", 2), raw)
		_, _, _, err = verifyChains(t, dbs[1])
		wantBroken(t, err, "n1", 2)
	})
	t.Run("Unregistered", func(t *testing.T) {
		dbs := setup(t)
		deleteRaw(t, c, dbs[0].Prefix()+"r/audit_chains/n2")
		_, _, _, err := verifyChains(t, dbs[0])
		wantBroken(t, err, "n2", 0)
	})
	t.Run("WholeChainDeleted", func(t *testing.T) {
		dbs := setup(t)
		deleteRaw(t, c, dbs[0].Prefix()+"r/audit.n1/", clientv3.WithPrefix())
		_, _, _, err := verifyChains(t, dbs[1])
		wantBroken(t, err, "n1", 0)
	})
}

// TestAuditChainsNoContention: nodes appending to the audit log at once
// through Batch (as signHash does), from parallel goroutines, never
// conflict when each has its own chain, and do when they share one: the
// chain head is the only key they both read and write.
func TestAuditChainsNoContention(t *testing.T) {
	const workers, appends = 8, 15
	run := func(t *testing.T, names ...string) (conflicts, commits uint64) {
		dbs := chainNodes(t, names...)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, len(dbs)*workers)
		for i, db := range dbs {
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for k := range appends {
						err := db.Batch(context.Background(), func(tx store.Tx) error {
							return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: fmt.Sprintf("node%d", i),
								Client: fmt.Sprintf("w%d", w), Hashes: []string{fmt.Sprintf("%064x", k)}, Outcome: store.AuditGranted})
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, db := range dbs {
			s := db.Stats()
			conflicts += s.Conflicts
			commits += s.Commits
		}
		_, n, _, err := verifyChains(t, dbs[0])
		if err != nil || n != uint64(len(dbs)*workers*appends) {
			t.Fatalf("verify: %d entries, %v; want %d", n, err, len(dbs)*workers*appends)
		}
		return conflicts, commits
	}
	conflicts, commits := run(t, "n1", "n2")
	t.Logf("two nodes, two chains: %d conflicts over %d commits", conflicts, commits)
	if conflicts != 0 {
		t.Errorf("two nodes with their own chains: %d conflicts over %d commits, want 0", conflicts, commits)
	}
	shared := func() (uint64, uint64) { return run(t, "n1", "n1") }
	conflicts, commits = shared()
	t.Logf("two nodes, one chain: %d conflicts over %d commits", conflicts, commits)
	if conflicts == 0 {
		t.Errorf("two nodes sharing a chain: no conflict over %d commits; the test does not race", commits)
	}
}

// TestAuditChainsCheckpoint: a checkpoint of a log of several chains
// covers every chain (one chain line each, the hash the digest of their
// heads): cutting off the tail of one chain, or deleting a whole chain
// with its registry entry, leaves chains that verify on their own, and
// only the checkpoint shows what is gone.
func TestAuditChainsCheckpoint(t *testing.T) {
	ctx := context.Background()
	c := rawClient(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const origin = "sign.example.org/audit"
	key, err := checkpoint.NewKey(origin, priv)
	if err != nil {
		t.Fatal(err)
	}
	setup := func(t *testing.T) ([]*etcd.DB, *checkpoint.Checkpoint, *checkpoint.Maker) {
		dbs := chainNodes(t, "n1", "n2")
		appendAudit(t, dbs[0], "node1", 4)
		appendAudit(t, dbs[1], "node2", 3)
		mk := &checkpoint.Maker{Store: dbs[0], Origin: origin, Dir: t.TempDir(),
			Key: func(context.Context, string) (*checkpoint.Key, error) { return key, nil }}
		made, err := mk.Make(ctx, "test", false)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := checkpoint.Open(made.Note, key.Verifier, origin)
		if err != nil {
			t.Fatalf("%v\n%s", err, made.Note)
		}
		if cp.Size != 7 || len(cp.Chains) != 2 || cp.Chains[0].Chain != "n1" || cp.Chains[0].Size != 4 ||
			cp.Chains[1].Chain != "n2" || cp.Chains[1].Size != 3 {
			t.Fatalf("checkpoint %+v\n%s", cp, made.Note)
		}
		// Both nodes append on (node 1 the checkpoint's own entry): the log
		// extends the checkpoint from either node, and a new one extends it.
		appendAudit(t, dbs[1], "node2", 2)
		if r := verifyCheckpoint(t, dbs[1], cp); !r.Extends || r.Reason != "" || r.Entries != 10 {
			t.Fatalf("grown log: %+v", r)
		}
		if _, err := mk.Make(ctx, "test", false); err != nil {
			t.Fatalf("second checkpoint: %v", err)
		}
		return dbs, cp, mk
	}
	t.Run("TailOfOneChainCut", func(t *testing.T) {
		dbs, cp, mk := setup(t)
		for seq := uint64(3); seq <= 5; seq++ { // n2 had 3 entries at the checkpoint, 5 now
			deleteRaw(t, c, entryKey(dbs[0], "n2", seq))
		}
		if _, _, _, err := verifyChains(t, dbs[0]); err != nil {
			t.Fatalf("the cut chain verifies on its own, yet: %v", err)
		}
		r := verifyCheckpoint(t, dbs[0], cp)
		if r.Extends || !errors.Is(r.Problem, checkpoint.ErrTruncated) || !strings.Contains(r.Problem.Error(), "of chain n2 has 2 entries, the checkpoint covers 3") {
			t.Fatalf("cut tail: %+v", r)
		}
		t.Logf("detected: %v", r.Problem)
		// Nor does the maker sign a checkpoint of the cut log.
		if _, err := mk.Make(ctx, "test", false); !errors.Is(err, checkpoint.ErrTruncated) {
			t.Fatalf("Make after the cut = %v, want ErrTruncated", err)
		}
	})
	t.Run("WholeChainGone", func(t *testing.T) {
		dbs, cp, _ := setup(t)
		deleteRaw(t, c, dbs[0].Prefix()+"r/audit.n1/", clientv3.WithPrefix())
		deleteRaw(t, c, dbs[0].Prefix()+"r/audit_chains/n1")
		if _, _, _, err := verifyChains(t, dbs[1]); err != nil {
			t.Fatalf("without chain n1 the log verifies on its own, yet: %v", err)
		}
		r := verifyCheckpoint(t, dbs[1], cp)
		if r.Extends || !errors.Is(r.Problem, checkpoint.ErrTruncated) || !strings.Contains(r.Problem.Error(), "of chain n1 has 0 entries") {
			t.Fatalf("deleted chain: %+v", r)
		}
		t.Logf("detected: %v", r.Problem)
	})
}

func verifyCheckpoint(t *testing.T, db *etcd.DB, cp *checkpoint.Checkpoint) *checkpoint.Report {
	t.Helper()
	var r *checkpoint.Report
	err := db.View(context.Background(), func(tx store.Tx) (err error) {
		r, err = checkpoint.Verify(tx, cp)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLastAuditEntryAcrossNodes: store.LastAuditEntry finds the last
// match in cluster order over the nodes' chains, reading each backwards
// from its end: the newest match of any node, not of the chain listed
// first.
func TestLastAuditEntryAcrossNodes(t *testing.T) {
	dbs := chainNodes(t, "n1", "n2")
	mark := func(db *etcd.DB, user string) {
		t.Helper()
		err := db.Update(context.Background(), func(tx store.Tx) error {
			return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditConfigLoaded, Actor: "signd", User: user, Outcome: store.AuditOK})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	mark(dbs[1], "n2 first")
	appendAudit(t, dbs[1], "n2", 100)
	mark(dbs[0], "n1 then")
	appendAudit(t, dbs[0], "n1", 100)
	appendAudit(t, dbs[1], "n2", 100)
	var got *store.AuditEntry
	err := dbs[1].View(context.Background(), func(tx store.Tx) (err error) {
		got, err = store.LastAuditEntry(tx, func(e *store.AuditEntry) bool { return e.Kind == store.AuditConfigLoaded })
		return err
	})
	if err != nil || got == nil || got.User != "n1 then" || got.Chain != "n1" {
		t.Fatalf("LastAuditEntry = %+v, %v; want n1's config_loaded", got, err)
	}
	mark(dbs[1], "n2 last")
	err = dbs[0].View(context.Background(), func(tx store.Tx) (err error) {
		got, err = store.LastAuditEntry(tx, func(e *store.AuditEntry) bool { return e.Kind == store.AuditConfigLoaded })
		return err
	})
	if err != nil || got == nil || got.User != "n2 last" {
		t.Fatalf("LastAuditEntry = %+v, %v; want n2's last config_loaded", got, err)
	}
}

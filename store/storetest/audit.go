package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// The audit log.

func auditEntry(user string, i int) *store.AuditEntry {
	return &store.AuditEntry{
		Time: time.Date(2030, 1, 2, 3, 4, 5, i, time.UTC), Kind: store.AuditSignHash,
		User: user, Client: "rp", Credential: "cred-1",
		Hashes:  []string{fmt.Sprintf("%064x", i)},
		Outcome: store.AuditGranted,
	}
}

func verifyAudit(t *testing.T, s store.Store) (uint64, []byte) {
	t.Helper()
	var n uint64
	var head []byte
	view(t, s, func(tx store.Tx) (err error) {
		n, head, err = store.VerifyAudit(tx)
		return err
	})
	return n, head
}

// auditSize is AuditSize in a read transaction.
func auditSize(t *testing.T, s store.Store) uint64 {
	t.Helper()
	var n uint64
	view(t, s, func(tx store.Tx) (err error) {
		n, err = tx.AuditSize()
		return err
	})
	return n
}

func testAuditAppend(t *testing.T, s store.Store) {
	if n, head := verifyAudit(t, s); n != 0 || !bytes.Equal(head, store.AuditGenesis()) {
		t.Errorf("empty log: %d entries, head %x", n, head)
	}
	if n := auditSize(t, s); n != 0 {
		t.Errorf("empty log: AuditSize %d", n)
	}
	var appended []*store.AuditEntry
	for i := range 3 {
		e := auditEntry("alice", i)
		if i == 1 {
			e.Time = time.Time{} // the store stamps it
			e.Outcome, e.Reason, e.Ref = store.AuditFailed, "hsm: token unavailable", 1
		}
		update(t, s, func(tx store.Tx) error { return tx.AppendAudit(e) })
		appended = append(appended, e)
	}
	for i, e := range appended {
		if e.Seq != uint64(i+1) {
			t.Errorf("entry %d: Seq %d", i, e.Seq)
		}
		if len(e.Digest) != 32 {
			t.Errorf("entry %d: digest %x", i, e.Digest)
		}
		want := store.AuditGenesis()
		if i > 0 {
			want = appended[i-1].Digest
		}
		if !bytes.Equal(e.Prev, want) {
			t.Errorf("entry %d: Prev %x, want %x", i, e.Prev, want)
		}
	}
	if appended[1].Time.IsZero() {
		t.Error("zero Time was not stamped")
	}
	n, head := verifyAudit(t, s)
	if n != 3 || !bytes.Equal(head, appended[2].Digest) {
		t.Errorf("VerifyAudit = %d, %x; want 3, %x", n, head, appended[2].Digest)
	}
	if n := auditSize(t, s); n != 3 {
		t.Errorf("AuditSize = %d, want 3", n)
	}
	// Inside the appending transaction, AuditSize counts the entry.
	updateRolledBack(t, s, func(tx store.Tx) error {
		if err := tx.AppendAudit(auditEntry("alice", 3)); err != nil {
			return err
		}
		if n, err := tx.AuditSize(); err != nil || n != 4 {
			t.Errorf("AuditSize after an append in the transaction = %d, %v; want 4", n, err)
		}
		return nil
	})
	if n := auditSize(t, s); n != 3 {
		t.Errorf("AuditSize after the rollback = %d, want 3", n)
	}
	// Reading back: the decoded entries are what was appended.
	var got []*store.AuditEntry
	view(t, s, func(tx store.Tx) error {
		return store.AuditEntries(tx, 2, func(e *store.AuditEntry) error { got = append(got, e); return nil })
	})
	if len(got) != 2 {
		t.Fatalf("AuditEntries(from 2) = %d entries, want 2", len(got))
	}
	for i, g := range got {
		w := appended[i+1]
		if g.Seq != w.Seq || !g.Time.Equal(w.Time) || g.Kind != w.Kind || g.User != w.User ||
			g.Client != w.Client || g.Credential != w.Credential || g.Outcome != w.Outcome ||
			g.Reason != w.Reason || g.Ref != w.Ref || len(g.Hashes) != 1 || g.Hashes[0] != w.Hashes[0] ||
			!bytes.Equal(g.Prev, w.Prev) || !bytes.Equal(g.Digest, w.Digest) {
			t.Errorf("entry %d read back as %+v, want %+v", w.Seq, g, w)
		}
	}
	// The stored encoding is the canonical one.
	view(t, s, func(tx store.Tx) error {
		return tx.AuditRecords(1, func(seq uint64, raw []byte) error {
			want, err := store.EncodeAuditEntry(appended[seq-1])
			if err != nil {
				return err
			}
			if !bytes.Equal(raw, want) {
				t.Errorf("entry %d stored as %s, want %s", seq, raw, want)
			}
			return nil
		})
	})
}

func testAuditRollback(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error { return tx.AppendAudit(auditEntry("alice", 1)) })
	exp := time.Now().Add(time.Hour)
	update(t, s, func(tx store.Tx) error { return tx.CreateToken(newToken("sad", store.TokenSAD, "", exp)) })
	// Consuming a SAD and appending its entry happen together or not at all.
	updateRolledBack(t, s, func(tx store.Tx) error {
		if err := tx.DeleteToken(store.Fingerprint("sad")); err != nil {
			return err
		}
		return tx.AppendAudit(auditEntry("alice", 2))
	})
	view(t, s, func(tx store.Tx) error {
		if _, err := tx.Token(store.Fingerprint("sad")); err != nil {
			t.Errorf("SAD after rollback: %v", err)
		}
		return nil
	})
	if n, _ := verifyAudit(t, s); n != 1 {
		t.Errorf("%d entries after rollback, want 1", n)
	}
	appendAfterRollback(t, s)
}

// appendAfterRollback appends an entry after the second one was rolled
// back: it takes the rolled back Seq 2 (no gap), and the chain verifies
// with two entries.
func appendAfterRollback(t *testing.T, s store.Store) {
	t.Helper()
	e := auditEntry("alice", 3)
	update(t, s, func(tx store.Tx) error { return tx.AppendAudit(e) })
	if e.Seq != 2 {
		t.Errorf("audit Seq after a rolled back append = %d, want 2 (no gap)", e.Seq)
	}
	if n, _ := verifyAudit(t, s); n != 2 {
		t.Errorf("%d audit entries, want 2", n)
	}
}

func testAuditInvalid(t *testing.T, s store.Store) {
	err := s.View(context.Background(), func(tx store.Tx) error { return tx.AppendAudit(auditEntry("alice", 1)) })
	wantErr(t, "AppendAudit in View", err, store.ErrReadOnly)
	for name, mutate := range map[string]func(*store.AuditEntry){
		"unknown kind": func(e *store.AuditEntry) { e.Kind = "teleport" },
		"no kind":      func(e *store.AuditEntry) { e.Kind = "" },
		"no outcome":   func(e *store.AuditEntry) { e.Outcome = "" },
	} {
		e := auditEntry("alice", 1)
		mutate(e)
		err := s.Update(context.Background(), func(tx store.Tx) error { return tx.AppendAudit(e) })
		wantErr(t, name, err, store.ErrInvalid)
	}
	if n, _ := verifyAudit(t, s); n != 0 {
		t.Errorf("%d entries after refused appends", n)
	}
}

// testAuditTimestamp: a time-stamp entry (kind timestamp) is kept with its
// digest and serial number, and the chain holds.
func testAuditTimestamp(t *testing.T, s store.Store) {
	e := &store.AuditEntry{
		Time: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Kind: store.AuditTimestamp, User: "alice", Client: "rp",
		Hashes: []string{strings.Repeat("ab", 32)}, Outcome: store.AuditGranted, Reason: "serial 1f",
	}
	update(t, s, func(tx store.Tx) error { return tx.AppendAudit(e) })
	var got []*store.AuditEntry
	err := s.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error { got = append(got, e); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != store.AuditTimestamp || got[0].Reason != "serial 1f" ||
		len(got[0].Hashes) != 1 || got[0].Hashes[0] != e.Hashes[0] {
		t.Errorf("timestamp entry read back as %+v", got)
	}
	if n, _ := verifyAudit(t, s); n != 1 {
		t.Errorf("%d audit entries, want 1", n)
	}
}

// testAuditConcurrent appends from many goroutines, each in its own
// transaction: the chain stays whole and every sequence number is used
// once.
func testAuditConcurrent(t *testing.T, s store.Store) {
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]bool{}
	for i := range n {
		wg.Go(func() {
			e := auditEntry(fmt.Sprintf("user%d", i), i)
			if err := s.Update(context.Background(), func(tx store.Tx) error { return tx.AppendAudit(e) }); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[e.Seq] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct sequence numbers, want %d", len(seen), n)
	}
	if got, _ := verifyAudit(t, s); got != n {
		t.Errorf("VerifyAudit counted %d, want %d", got, n)
	}
}

// testAuditCanonical shows that DecodeAuditEntry accepts exactly the
// stored encoding and that VerifyAudit's checker refuses every other
// spelling, a wrong digest and a wrong chain link.
func testAuditCanonical(t *testing.T, s store.Store) {
	var raws [][]byte
	for i := range 2 {
		update(t, s, func(tx store.Tx) error { return tx.AppendAudit(auditEntry("alice", i)) })
	}
	view(t, s, func(tx store.Tx) error {
		return tx.AuditRecords(1, func(_ uint64, raw []byte) error {
			raws = append(raws, bytes.Clone(raw))
			return nil
		})
	})
	if len(raws) != 2 {
		t.Fatalf("%d records", len(raws))
	}
	var v store.AuditVerifier
	if _, err := v.Check(1, raws[0]); err != nil {
		t.Fatalf("entry 1: %v", err)
	}
	bad := map[string][]byte{
		"upper-case digest": bytes.Replace(raws[1], []byte(`"digest":"`), []byte(`"digest":"`), 1),
		"extra space":       bytes.Replace(raws[1], []byte(`"user":`), []byte(`"user": `), 1),
		"other user":        bytes.Replace(raws[1], []byte(`"alice"`), []byte(`"alicf"`), 1),
		"unknown field":     bytes.Replace(raws[1], []byte(`{"seq"`), []byte(`{"x":1,"seq"`), 1),
		"trailing data":     append(bytes.Clone(raws[1]), ' '),
		"not JSON":          []byte("garbage"),
	}
	// Make the upper-case variant real: upper-case one hex letter of the digest.
	up := bytes.Clone(raws[1])
	i := bytes.Index(up, []byte(`"digest":"`)) + len(`"digest":"`)
	for ; i < len(up); i++ {
		if up[i] >= 'a' && up[i] <= 'f' {
			up[i] -= 'a' - 'A'
			break
		}
	}
	bad["upper-case digest"] = up
	for name, raw := range bad {
		vv := v // a copy positioned after entry 1
		_, err := vv.Check(2, raw)
		var be *store.AuditBrokenError
		if !errors.As(err, &be) || be.Seq != 2 {
			t.Errorf("%s: Check = %v, want broken at 2", name, err)
		}
	}
	// The right entry under the wrong key, and entry 2 without entry 1.
	vv := v
	if _, err := vv.Check(3, raws[1]); err == nil {
		t.Error("entry stored under the wrong key accepted")
	}
	var fresh store.AuditVerifier
	if _, err := fresh.Check(2, raws[1]); err == nil {
		t.Error("chain starting at entry 2 accepted")
	}
	if _, err := v.Check(2, raws[1]); err != nil {
		t.Errorf("entry 2: %v", err)
	}
}

// testAuditChainsOne: a store whose transactions append to chain "" (every
// bbolt and memory store, an etcd node without a name) lists that chain
// alone, and reads it through the chain-aware methods as through
// AuditRecords and AuditSize; a chain it does not hold reads as empty,
// a name no chain may have is refused.
func testAuditChainsOne(t *testing.T, s store.Store) {
	for i := range 2 {
		update(t, s, func(tx store.Tx) error { return tx.AppendAudit(auditEntry("alice", i)) })
	}
	view(t, s, func(tx store.Tx) error {
		chains, err := tx.AuditChains()
		if err != nil || len(chains) != 1 || chains[0] != (store.AuditChainInfo{Name: "", Registered: true, Stored: true}) {
			t.Errorf("AuditChains = %+v, %v; want chain \"\" alone", chains, err)
		}
		var all, one [][]byte
		if err := tx.AuditRecords(1, func(_ uint64, raw []byte) error { all = append(all, bytes.Clone(raw)); return nil }); err != nil {
			return err
		}
		if err := tx.AuditChainRecords("", 2, func(_ uint64, raw []byte) error { one = append(one, bytes.Clone(raw)); return nil }); err != nil {
			return err
		}
		if len(all) != 2 || len(one) != 1 || !bytes.Equal(all[1], one[0]) {
			t.Errorf("AuditChainRecords(\"\", 2) = %q, AuditRecords(1) = %q", one, all)
		}
		for _, raw := range all {
			e, err := store.DecodeAuditEntry(raw)
			if err != nil || e.Chain != "" || e.Rev < 0 {
				t.Errorf("entry %s: chain %q rev %d, %v", raw, e.Chain, e.Rev, err)
			}
		}
		if n, err := tx.AuditChainSize(""); err != nil || n != 2 {
			t.Errorf("AuditChainSize(\"\") = %d, %v; want 2", n, err)
		}
		if n, err := tx.AuditSize(); err != nil || n != 2 {
			t.Errorf("AuditSize = %d, %v; want 2", n, err)
		}
		if n, err := tx.AuditChainSize("n1"); err != nil || n != 0 {
			t.Errorf("AuditChainSize(n1) = %d, %v; want 0", n, err)
		}
		err = tx.AuditChainRecords("n1", 1, func(seq uint64, _ []byte) error { return fmt.Errorf("entry %d of chain n1", seq) })
		if err != nil {
			t.Errorf("AuditChainRecords(n1) = %v, want no entries", err)
		}
		for _, bad := range []string{"N1", "a/b", "-a", strings.Repeat("x", 64)} {
			if err := tx.AuditChainRecords(bad, 1, func(uint64, []byte) error { return nil }); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("AuditChainRecords(%q) = %v, want ErrInvalid", bad, err)
			}
			if _, err := tx.AuditChainSize(bad); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("AuditChainSize(%q) = %v, want ErrInvalid", bad, err)
			}
		}
		return nil
	})
}

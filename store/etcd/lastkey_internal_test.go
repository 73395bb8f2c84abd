package etcd

import (
	"context"
	"testing"

	"github.com/signd/signd/store"
)

// TestDirectLastFromHint: without the watch cache, an audit append finds
// the chain's head by reading from the head found last to the end of the
// chain, not the whole chain (etcd sorts a whole range to answer a sorted
// read of it); a head deleted behind the store's back sends it back to the
// whole chain, and the chain it appends to stays whole.
func TestDirectLastFromHint(t *testing.T) {
	db := openEmbedded(t, Options{NoCache: true})
	ctx := context.Background()
	appendOne := func() {
		t.Helper()
		if err := db.Update(ctx, func(tx store.Tx) error {
			return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, Outcome: store.AuditGranted})
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		appendOne()
	}
	chain := db.recordKey("audit", "")
	k := count(db)
	appendOne()
	db.kv = k.KV
	for _, key := range k.keys {
		if key == chain {
			t.Errorf("an append read the whole chain (from %q); reads: %q", key, k.keys)
		}
	}
	verifyAudit(t, db, 6)

	// The hint is entry 5 (the head the sixth append found); entries 5
	// and 6 go behind the store's back: nothing is left from the hint on.
	for _, seq := range []byte{5, 6} {
		key := db.recordKey("audit", string([]byte{0, 0, 0, 0, 0, 0, 0, seq}))
		if resp, err := db.client.Delete(ctx, key); err != nil || resp.Deleted != 1 {
			t.Fatalf("delete entry %d: %v, %v", seq, resp, err)
		}
	}
	appendOne()
	verifyAudit(t, db, 5)
}

package bolt_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest/backends"
)

// TestAuditEntryFormat: a bbolt store appends to chain "" and writes its
// entries exactly as signd always has, with neither a chain nor a
// revision: the bytes (and so the digests) of an entry are those of the
// format before there were several chains.
func TestAuditEntryFormat(t *testing.T) {
	db := backends.Bolt(t, bolt.Options{})
	ctx := context.Background()
	for i := range 2 {
		err := db.Update(ctx, func(tx store.Tx) error {
			return tx.AppendAudit(&store.AuditEntry{Time: time.Date(2030, 1, 2, 3, 4, 5, i, time.UTC), Kind: store.AuditSignHash,
				User: "alice", Client: "rp", Credential: "cred-1", Hashes: []string{"00ff"}, Outcome: store.AuditGranted})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`{"seq":1,"time":"2030-01-02T03:04:05Z","kind":"signHash","user":"alice","client":"rp","credential":"cred-1","hashes":["00ff"],"outcome":"granted","reason":"","ref":0,"prev":"0000000000000000000000000000000000000000000000000000000000000000","digest":"d5c1b9caaa03f815fea5a8c65bcd158e3d66191fcd8c60fcfcf47c1f991d277f"}`,
		`{"seq":2,"time":"2030-01-02T03:04:05.000000001Z","kind":"signHash","user":"alice","client":"rp","credential":"cred-1","hashes":["00ff"],"outcome":"granted","reason":"","ref":0,"prev":"d5c1b9caaa03f815fea5a8c65bcd158e3d66191fcd8c60fcfcf47c1f991d277f","digest":"b5d535f10f938915d596266240d5a57e9e695409479000e5233c58d241ebf247"}`,
	}
	var got []string
	err := db.View(ctx, func(tx store.Tx) error {
		return tx.AuditRecords(1, func(_ uint64, raw []byte) error { got = append(got, string(raw)); return nil })
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d stored as\n%s\nwant\n%s", i+1, got[i], want[i])
		}
	}
}

// TestCheckPlantedChain: a bbolt file's audit log is chain "" alone; a
// bucket "audit.<name>" planted beside it, with an entry copied from the
// log, is a chain no registry names, which the check reports.
func TestCheckPlantedChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signd.db")
	buildStore(t, path)
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(btx *bbolt.Tx) error {
		k, v := btx.Bucket([]byte("audit")).Cursor().First()
		b, err := btx.CreateBucket([]byte("audit.n1"))
		if err != nil {
			return err
		}
		return b.Put(k, v)
	})
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bolt.CheckFile(context.Background(), path, time.Second)
	if err != nil || rep.OK || !strings.Contains(rep.Problem, "chain n1") {
		t.Fatalf("CheckFile = %v, ok=%v problem %q; want chain n1 reported", err, rep.OK, rep.Problem)
	}
	t.Logf("reported: %s", rep.Problem)
}

package bolt_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// BenchmarkCredentialsByOwner lists one page (10) of one owner's 20
// credentials while other users hold 10, 1,000 or 10,000 credentials. With
// the owner index the cost is a Seek plus the page, so ns/op stays flat as
// "others" grows (it is dominated by JSON-decoding the 10 records). The
// "scan" variants show, for contrast, what finding the same page by
// filtering a full listing would cost: linear in the total.
func BenchmarkCredentialsByOwner(b *testing.B) {
	for _, others := range []int{10, 1000, 10000} {
		db := backends.Bolt(b, bolt.Options{})
		ctx := context.Background()
		err := db.Update(ctx, func(tx store.Tx) error {
			for _, name := range []string{"owner", "other1", "other2", "other3"} {
				if err := tx.CreateUser(&store.User{ID: "id-" + name, Username: name, Status: store.UserActive}); err != nil {
					return err
				}
			}
			mk := func(owner string) error {
				id, err := store.NewID()
				if err != nil {
					return err
				}
				return tx.CreateCredential(&store.Credential{
					ID: id, Owner: owner, KeyID: []byte(id), Algorithm: store.AlgRSA2048, KeyBits: 2048,
					Status: store.CredentialEnabled, Chain: [][]byte{make([]byte, 1200)},
				})
			}
			for range 20 {
				if err := mk("owner"); err != nil {
					return err
				}
			}
			for i := range others {
				if err := mk(fmt.Sprintf("other%d", 1+i%3)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			for b.Loop() {
				err := db.View(ctx, func(tx store.Tx) error {
					cs, err := tx.Credentials("owner", "", 10)
					if err == nil && len(cs) != 10 {
						err = fmt.Errorf("page of %d", len(cs))
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("scan/others=%d", others), func(b *testing.B) {
			for b.Loop() {
				err := db.View(ctx, func(tx store.Tx) error {
					all, err := tx.Credentials("", "", 0)
					n := 0
					for _, c := range all {
						if c.Owner == "owner" && n < 10 {
							n++
						}
					}
					if err == nil && n != 10 {
						err = fmt.Errorf("page of %d", n)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConsumeSAD: one SAD consumed with its audit entry in one
// Update (two fsyncs); store/memory has the same benchmark in memory.
func BenchmarkConsumeSAD(b *testing.B) {
	storetest.BenchConsume(b, backends.Bolt(b, bolt.Options{}))
}

package bolt_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
)

// BenchmarkScale measures the store's share of the hot requests in bbolt
// files (real files, fsync on commit) holding N credentials of other users
// and N live SADs, for N = 1 k, 10 k, 100 k and 1 M (SIGND_BENCH_SCALE_MAX
// lowers the top; -short skips it all). The credentials and the SADs are in
// two files, so that neither grows past about 1.5 GB at 1 M:
//
//   - list: one page of 10 of one owner's 20 credentials (credentials/list);
//   - info: one credential by ID (credentials/info);
//   - token: one live token by fingerprint (the bearer check);
//   - consume: one SAD read, deleted and its audit entry appended in one
//     Update (signHash's transaction; storetest.BenchConsume);
//   - sweep: one bounded sweep transaction removing 250 expired tokens
//     (oauth.Sweep's batch) while the N live ones stay.
//
// The files grow from N to the next N in the same run, so every size is
// measured on the same files. Keys are loaded in ascending order (credential
// IDs cred-0000001…, token fingerprints counting up) so that the loading
// transactions touch only the B+tree's right edge and stay fast; the
// benchmarked operations do not depend on that order.
func BenchmarkScale(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a store of up to 1 M credentials and 1 M SADs")
	}
	top := 1_000_000
	if s := os.Getenv("SIGND_BENCH_SCALE_MAX"); s != "" {
		var err error
		if top, err = strconv.Atoi(s); err != nil {
			b.Fatalf("SIGND_BENCH_SCALE_MAX: %v", err)
		}
	}
	ctx := context.Background()
	creds, db := mustOpen(b, bolt.Options{}), mustOpen(b, bolt.Options{})
	now := time.Now()
	chain := [][]byte{make([]byte, 200)} // a short stand-in: a real chain only adds decoding per record
	newCred := func(id, owner string) *store.Credential {
		return &store.Credential{ID: id, Owner: owner, KeyID: []byte(id), Algorithm: store.AlgRSA2048, KeyBits: 2048,
			Status: store.CredentialEnabled, Chain: chain}
	}
	var seq uint64 // token fingerprints count up from here
	fingerprint := func() []byte {
		seq++
		h := make([]byte, 32)
		binary.BigEndian.PutUint64(h[24:], seq)
		return h
	}
	digest := make([]byte, 32)
	newSAD := func(exp time.Time) *store.Token {
		return &store.Token{Hash: fingerprint(), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			CredentialID: "cred-0000001", Hashes: [][]byte{digest}, ExpiresAt: exp}
	}
	err := creds.Update(ctx, func(tx store.Tx) error {
		for _, name := range []string{"owner", "other1", "other2", "other3"} {
			if err := tx.CreateUser(&store.User{ID: "id-" + name, Username: name, Status: store.UserActive}); err != nil {
				return err
			}
		}
		for i := range 20 {
			if err := tx.CreateCredential(newCred(fmt.Sprintf("owner-%02d", i), "owner")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var liveToken []byte
	loaded := 0
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		if n > top {
			break
		}
		start := time.Now()
		for loaded < n {
			const chunk = 20_000
			err := creds.Update(ctx, func(tx store.Tx) error {
				for i := loaded; i < min(loaded+chunk, n); i++ {
					if err := tx.CreateCredential(newCred(fmt.Sprintf("cred-%07d", i+1), fmt.Sprintf("other%d", 1+i%3))); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			err = db.Update(ctx, func(tx store.Tx) error {
				for i := loaded; i < min(loaded+chunk, n); i++ {
					sad := newSAD(now.Add(time.Hour + time.Duration(i)*time.Millisecond))
					if err := tx.CreateToken(sad); err != nil {
						return err
					}
					if i == n/2 {
						liveToken = sad.Hash
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			loaded = min(loaded+chunk, n)
		}
		fc, _ := os.Stat(creds.Path())
		ft, _ := os.Stat(db.Path())
		b.Logf("N=%d: loaded in %v, files %d MiB (credentials) and %d MiB (SADs)",
			n, time.Since(start).Round(time.Millisecond), fc.Size()>>20, ft.Size()>>20)
		info := fmt.Sprintf("cred-%07d", n/2)
		view := func(b *testing.B, s *bolt.DB, fn func(tx store.Tx) error) {
			for b.Loop() {
				if err := s.View(ctx, fn); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(fmt.Sprintf("N=%d/list", n), func(b *testing.B) {
			view(b, creds, func(tx store.Tx) error {
				cs, err := tx.Credentials("owner", "", 10)
				if err == nil && len(cs) != 10 {
					err = fmt.Errorf("page of %d", len(cs))
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("N=%d/info", n), func(b *testing.B) {
			view(b, creds, func(tx store.Tx) error { _, err := tx.Credential(info); return err })
		})
		b.Run(fmt.Sprintf("N=%d/token", n), func(b *testing.B) {
			view(b, db, func(tx store.Tx) error { _, err := tx.Token(liveToken); return err })
		})
		b.Run(fmt.Sprintf("N=%d/consume", n), func(b *testing.B) {
			storetest.BenchConsume(b, db)
		})
		b.Run(fmt.Sprintf("N=%d/sweep", n), func(b *testing.B) {
			const batch = 250
			var inTx time.Duration
			defer func() { b.ReportMetric(float64(inTx.Microseconds())/float64(b.N)/1000, "ms-in-tx/op") }()
			for b.Loop() {
				b.StopTimer()
				err := db.Update(ctx, func(tx store.Tx) error {
					for i := range batch {
						if err := tx.CreateToken(newSAD(now.Add(-time.Hour + time.Duration(i)))); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				err = db.Update(ctx, func(tx store.Tx) error {
					defer func(start time.Time) { inTx += time.Since(start) }(time.Now())
					n, err := tx.SweepExpired(now, batch)
					if err == nil && n.Tokens != batch {
						err = fmt.Errorf("swept %+v", n)
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

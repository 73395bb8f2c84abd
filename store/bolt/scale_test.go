package bolt_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
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
//   - sweep: one bounded sweep transaction removing sweepBatch expired
//     SADs (random fingerprints, as issued) while the N live ones stay;
//     ms-in-tx/op is its time before the commit.
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
	creds, db := backends.Bolt(b, bolt.Options{}), backends.Bolt(b, bolt.Options{})
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
			const batch = sweepBatch
			var inTx time.Duration
			defer func() { b.ReportMetric(float64(inTx.Microseconds())/float64(b.N)/1000, "ms-in-tx/op") }()
			for b.Loop() {
				b.StopTimer()
				err := db.Update(ctx, func(tx store.Tx) error {
					for i := range batch {
						sad := newSAD(now.Add(-time.Hour + time.Duration(i)))
						sad.Hash = store.Fingerprint(fmt.Sprint("expired ", seq)) // random, as issued
						if err := tx.CreateToken(sad); err != nil {
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

// sweepBatch is oauth's default Config.SweepBatch.
const sweepBatch = 32

// BenchmarkSweepHold compares, for M = 1 k, 10 k and 100 k expired SADs
// (random fingerprints, as issued) in a bbolt file, a sweep that removes
// all of them in one write transaction (DeleteExpiredTokens: oauth.Sweep
// before it worked in batches) with the batched sweep (SweepExpired of
// sweepBatch until fewer are left). ms-lock-p50 and ms-lock-max are the
// median and the longest time one transaction held the store's write lock,
// commit included; tx/op the transactions per sweep. -short skips it.
func BenchmarkSweepHold(b *testing.B) {
	if testing.Short() {
		b.Skip("fills stores with up to 100 k expired SADs")
	}
	ctx := context.Background()
	now := time.Now()
	digest := make([]byte, 32)
	for _, m := range []int{1_000, 10_000, 100_000} {
		fill := func(b *testing.B, db *bolt.DB) {
			for lo := 0; lo < m; lo += 20_000 {
				err := db.Update(ctx, func(tx store.Tx) error {
					for i := lo; i < min(lo+20_000, m); i++ {
						err := tx.CreateToken(&store.Token{Hash: store.Fingerprint(fmt.Sprint("sad-", i)), Kind: store.TokenSAD,
							ClientID: "rp", Username: "alice", CredentialID: "cred-1", Hashes: [][]byte{digest},
							ExpiresAt: now.Add(-time.Hour + time.Duration(i)*time.Millisecond)})
						if err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, batched := range []bool{false, true} {
			name := fmt.Sprintf("M=%d/one-transaction", m)
			if batched {
				name = fmt.Sprintf("M=%d/batches-of-%d", m, sweepBatch)
			}
			b.Run(name, func(b *testing.B) {
				var durs []time.Duration
				for b.Loop() {
					b.StopTimer()
					db := backends.Bolt(b, bolt.Options{})
					fill(b, db)
					b.StartTimer()
					removed := 0
					for {
						start := time.Now()
						var n int
						err := db.Update(ctx, func(tx store.Tx) (err error) {
							if !batched {
								n, err = tx.DeleteExpiredTokens(now)
								return err
							}
							s, err := tx.SweepExpired(now, sweepBatch)
							n = s.Total()
							return err
						})
						if err != nil {
							b.Fatal(err)
						}
						durs = append(durs, time.Since(start))
						removed += n
						if !batched || n < sweepBatch {
							break
						}
					}
					if removed != m {
						b.Fatalf("removed %d of %d", removed, m)
					}
				}
				slices.Sort(durs)
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
				b.ReportMetric(ms(durs[len(durs)/2]), "ms-lock-p50")
				b.ReportMetric(ms(durs[len(durs)-1]), "ms-lock-max")
				b.ReportMetric(float64(len(durs))/float64(b.N), "tx/op")
			})
		}
	}
}

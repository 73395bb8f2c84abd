package bolt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
)

// BenchmarkFdatasync is what one fdatasync of one freshly written 4 KiB
// page costs on the disk holding the test's temporary directory: the floor
// of a bbolt commit, which makes two (data pages, then the meta page).
func BenchmarkFdatasync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "sync"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for i := 0; b.Loop(); i++ {
		page[0] = byte(i)
		if _, err := f.WriteAt(page, int64(i%64)*4096); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignHashCommit runs signHash's consuming transaction against a
// real bbolt file holding live SADs with random fingerprints (as issued):
// read the credential (with a certificate-sized chain), read and delete the
// SAD, read its client and user, append the audit entry; one Update per
// operation, so two fdatasyncs each. It reports per commit the write calls
// bbolt made (one per dirty page or run of pages, the meta page included),
// the KiB of pages it wrote besides the meta page (data pages and the
// freelist), the size of the freelist at the end, the time spent before
// the commit and the commit's own times, and how long opening the file
// takes afterwards.
//
// The bbolt settings compared: bbolt's defaults (the freelist an array,
// written by every commit), the freelist a hash map, and the hash map not
// written at all (rebuilt by Open from the pages).
func BenchmarkSignHashCommit(b *testing.B) {
	settings := []struct {
		name string
		tune func(*bbolt.Options)
	}{
		{"freelist=array,synced", func(o *bbolt.Options) { o.FreelistType, o.NoFreelistSync = bbolt.FreelistArrayType, false }},
		{"freelist=hashmap,synced", func(o *bbolt.Options) { o.FreelistType, o.NoFreelistSync = bbolt.FreelistMapType, false }},
		{"freelist=hashmap,not-synced", func(o *bbolt.Options) { o.FreelistType, o.NoFreelistSync = bbolt.FreelistMapType, true }},
	}
	for _, live := range []int{1000, 100000} {
		for _, s := range settings {
			b.Run("live="+itoa(live)+"/"+s.name, func(b *testing.B) { benchSignHashCommit(b, live, s.tune) })
		}
	}
}

func itoa(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return itoa(n/1000000) + "M"
	case n >= 1000 && n%1000 == 0:
		return itoa(n/1000) + "k"
	}
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

func benchSignHashCommit(b *testing.B, live int, tune func(*bbolt.Options)) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "signd.db")
	db, err := Open(path, Options{tune: tune})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	exp := time.Now().Add(time.Hour)
	digest := make([]byte, 32)
	newFingerprint := func() []byte {
		h := make([]byte, 32)
		_, _ = rand.Read(h)
		return h
	}
	err = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive,
			PasswordHash: "$argon2id$v=19$m=65536,t=3,p=2$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"}); err != nil {
			return err
		}
		if err := tx.CreateClient(&store.Client{ID: "rp", Name: "Relying party", SecretHash: store.HashSecret("client secret"),
			RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"service", "credential"}}); err != nil {
			return err
		}
		return tx.CreateCredential(&store.Credential{ID: "cred-1", Owner: "alice", KeyID: []byte("key-1"),
			Algorithm: store.AlgRSA2048, KeyBits: 2048, Status: store.CredentialEnabled, Chain: [][]byte{make([]byte, 1400)}})
	})
	if err != nil {
		b.Fatal(err)
	}
	newSAD := func() *store.Token {
		return &store.Token{Hash: newFingerprint(), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			CredentialID: "cred-1", Hashes: [][]byte{digest}, ExpiresAt: exp, AuthTime: time.Now(), RequestedAt: time.Now()}
	}
	for lo := 0; lo < live; lo += 5000 {
		err := db.Update(ctx, func(tx store.Tx) error {
			for range min(5000, live-lo) {
				if err := tx.CreateToken(newSAD()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	sads := make([][]byte, b.N)
	for lo := 0; lo < b.N; lo += 5000 {
		err := db.Update(ctx, func(tx store.Tx) error {
			for i := lo; i < min(lo+5000, b.N); i++ {
				s := newSAD()
				sads[i] = s.Hash
				if err := tx.CreateToken(s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	before := db.db.Stats()
	var inTx time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		err := db.Update(ctx, func(tx store.Tx) error {
			start := time.Now()
			defer func() { inTx += time.Since(start) }()
			if _, err := tx.Credential("cred-1"); err != nil {
				return err
			}
			sad, err := tx.Token(sads[i])
			if err != nil {
				return err
			}
			if err := tx.DeleteToken(sads[i]); err != nil {
				return err
			}
			if _, err := tx.Client(sad.ClientID); err != nil {
				return err
			}
			if _, err := tx.User(sad.Username); err != nil {
				return err
			}
			if sad.CredentialID != "cred-1" {
				return errors.New("wrong SAD")
			}
			return tx.AppendAudit(&store.AuditEntry{
				Kind: store.AuditSignHash, User: sad.Username, Client: sad.ClientID, Credential: sad.CredentialID,
				Hashes: []string{hex.EncodeToString(sad.Hashes[0])}, Outcome: store.AuditGranted,
			})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	after := db.db.Stats()
	d := after.TxStats.Sub(&before.TxStats)
	n := float64(b.N)
	b.ReportMetric(float64(d.GetWrite())/n, "writes/op")
	b.ReportMetric(float64(d.GetPageAlloc())/n/1024, "KiB-written/op")
	b.ReportMetric(float64(after.FreelistInuse)/1024, "KiB-freelist")
	b.ReportMetric(float64(inTx.Microseconds())/n, "µs-in-tx/op")
	b.ReportMetric(float64(d.GetWriteTime().Microseconds())/n, "µs-write+sync/op")
	b.ReportMetric(float64(d.GetSpillTime().Microseconds()+d.GetRebalanceTime().Microseconds())/n, "µs-spill/op")
	// CPU time (user + system) of the process per commit: unlike the wall
	// times it does not count waiting for the disk or for a CPU.
	b.ReportMetric(float64(cpu.Microseconds())/n, "µs-cpu/op")
	// What the settings cost when the daemon starts: opening the file.
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if db, err = Open(path, Options{tune: tune}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms-open")
}

// cpuTime is the CPU time (user + system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

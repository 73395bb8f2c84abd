package storetest

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// BenchConsume measures what a granted signHash asks of the store: one
// write transaction that reads a SAD, deletes it and appends the audit
// entry of its use (ConsumeSAD). The b.N SADs are created before the timer
// starts. Backends call it from a Benchmark function to compare their
// costs.
func BenchConsume(b *testing.B, s store.Store) {
	ctx := context.Background()
	sads := PrepareSADs(b, s, b.N, 1000)
	b.ResetTimer()
	for i := range b.N {
		if err := s.Update(ctx, func(tx store.Tx) error { return ConsumeSAD(tx, sads[i]) }); err != nil {
			b.Fatal(err)
		}
	}
}

// PrepareSADs creates n live SADs (user alice, client rp, credential
// cred-1, one SHA-256 digest each) in write transactions of at most chunk
// SADs, and returns their fingerprints in order.
func PrepareSADs(tb testing.TB, s store.Store, n, chunk int) [][]byte {
	tb.Helper()
	exp := time.Now().Add(time.Hour)
	digest := make([]byte, 32)
	sads := make([][]byte, n)
	for lo := 0; lo < n; lo += chunk {
		err := s.Update(context.Background(), func(tx store.Tx) error {
			for i := lo; i < min(lo+chunk, n); i++ {
				sads[i] = store.Fingerprint(fmt.Sprint("sad-", i))
				err := tx.CreateToken(&store.Token{
					Hash: sads[i], Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
					CredentialID: "cred-1", Hashes: [][]byte{digest}, ExpiresAt: exp,
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return sads
}

// ConsumeSAD is signHash's share of the store inside tx: read the SAD
// sad, delete it and append the audit entry of its use.
func ConsumeSAD(tx store.Tx, sad []byte) error {
	t, err := tx.Token(sad)
	if err != nil {
		return err
	}
	if err := tx.DeleteToken(sad); err != nil {
		return err
	}
	return tx.AppendAudit(&store.AuditEntry{
		Kind: store.AuditSignHash, User: t.Username, Client: t.ClientID, Credential: t.CredentialID,
		Hashes: []string{hex.EncodeToString(t.Hashes[0])}, Outcome: store.AuditGranted,
	})
}

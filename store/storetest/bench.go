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
// entry of its use. The b.N SADs are created before the timer starts.
// Backends call it from a Benchmark function to compare their costs.
func BenchConsume(b *testing.B, s store.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	digest := make([]byte, 32)
	sads := make([][]byte, b.N)
	const chunk = 1000
	for lo := 0; lo < b.N; lo += chunk {
		err := s.Update(ctx, func(tx store.Tx) error {
			for i := lo; i < min(lo+chunk, b.N); i++ {
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
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		err := s.Update(ctx, func(tx store.Tx) error {
			sad, err := tx.Token(sads[i])
			if err != nil {
				return err
			}
			if err := tx.DeleteToken(sads[i]); err != nil {
				return err
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
}

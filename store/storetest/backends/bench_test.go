package backends_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// BenchmarkBackends compares the backends on what the protocol unit tests
// ask of a store: a fresh store per test (Open), the reads that open a
// request (a client, a user and a credential in one View), issuing a
// token (Update) and consuming a SAD with its audit entry (Update).
func BenchmarkBackends(b *testing.B) {
	ctx := context.Background()
	for _, be := range backends.All() {
		b.Run(be.Name+"/Open", func(b *testing.B) {
			for b.Loop() {
				be.Open(b)
			}
		})
		b.Run(be.Name+"/View", func(b *testing.B) {
			s := be.Open(b)
			seed(b, s)
			for b.Loop() {
				err := s.View(ctx, func(tx store.Tx) error {
					if _, err := tx.Client("rp"); err != nil {
						return err
					}
					if _, err := tx.User("alice"); err != nil {
						return err
					}
					_, err := tx.Credential("cred-1")
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.Name+"/CreateToken", func(b *testing.B) {
			s := be.Open(b)
			exp := time.Now().Add(time.Hour)
			i := 0
			for b.Loop() {
				i++
				err := s.Update(ctx, func(tx store.Tx) error {
					return tx.CreateToken(&store.Token{
						Hash: store.Fingerprint("at-" + strconv.Itoa(i)), Kind: store.TokenAccess,
						ClientID: "rp", Username: "alice", Scopes: []string{"service"}, ExpiresAt: exp,
					})
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.Name+"/ConsumeSAD", func(b *testing.B) { storetest.BenchConsume(b, be.Open(b)) })
	}
}

// seed stores the client rp and the user alice with her credential cred-1.
func seed(b *testing.B, s store.Store) {
	b.Helper()
	err := s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.CreateClient(&store.Client{ID: "rp", Name: "RP", RedirectURIs: []string{"https://rp.example/cb"}, SecretHash: store.HashSecret("s")}); err != nil {
			return err
		}
		if err := tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive}); err != nil {
			return err
		}
		return tx.CreateCredential(&store.Credential{
			ID: "cred-1", Owner: "alice", KeyID: []byte("k"), Algorithm: store.AlgRSA2048, KeyBits: 2048,
			Status: store.CredentialEnabled, Chain: [][]byte{make([]byte, 1200)},
		})
	})
	if err != nil {
		b.Fatal(err)
	}
}

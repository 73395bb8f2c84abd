package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/signd/signd/store"
)

type prepareOpts struct {
	config, user, client, credential, out string
	count                                 int
}

// loadFile is what prepare writes and the benchmarks read.
type loadFile struct {
	Bearer     string     `json:"bearer"`
	Credential string     `json:"credential"`
	KeyID      []byte     `json:"key_id"`
	Items      []loadItem `json:"items"`
}

type loadItem struct {
	SAD  string `json:"sad"`
	Hash []byte `json:"hash"` // 32 random bytes standing for a SHA-256 digest
}

// prepareChunk is how many SADs prepare writes per transaction.
const prepareChunk = 100

// tokenLife outlives any benchmark run.
const tokenLife = 2 * time.Hour

func random32() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

func prepare(ctx context.Context, p prepareOpts, out io.Writer) error {
	switch {
	case p.config == "" || p.user == "" || p.client == "" || p.credential == "" || p.out == "":
		return errors.New("prepare needs --config, --user, --client, --credential and --out")
	case p.count < 1 || p.count > 1000000:
		return errors.New("--count must be 1 to 1000000")
	}
	db, err := openConfigStore(ctx, p.config)
	if err != nil {
		return err
	}
	defer db.Close()

	f := loadFile{Bearer: base64.RawURLEncoding.EncodeToString(random32()), Credential: p.credential}
	now := time.Now()
	var gen uint64
	err = db.Update(ctx, func(tx store.Tx) error {
		cred, err := tx.Credential(p.credential)
		if err != nil {
			return fmt.Errorf("credential %s: %w", p.credential, err)
		}
		if cred.Owner != p.user || cred.Status != store.CredentialEnabled {
			return fmt.Errorf("credential %s is not an enabled credential of %s", p.credential, p.user)
		}
		f.KeyID = cred.KeyID
		u, err := tx.User(p.user)
		if err != nil {
			return fmt.Errorf("user %s: %w", p.user, err)
		}
		gen = u.SecretGeneration // signHash refuses a SAD of another generation
		if err := tx.CreateToken(&store.Token{
			Hash: store.Fingerprint(f.Bearer), Kind: store.TokenAccess, ClientID: p.client, Username: p.user,
			Scopes: []string{"service"}, AuthTime: now, RequestedAt: now, ExpiresAt: now.Add(tokenLife),
		}); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The SADs in transactions of prepareChunk: an etcd transaction is
	// bounded in operations (--max-txn-ops).
	f.Items = make([]loadItem, p.count)
	for lo := 0; lo < p.count; lo += prepareChunk {
		err := db.Update(ctx, func(tx store.Tx) error {
			for i := lo; i < min(lo+prepareChunk, p.count); i++ {
				it := loadItem{SAD: base64.RawURLEncoding.EncodeToString(random32()), Hash: random32()}
				if err := tx.CreateToken(&store.Token{
					Hash: store.Fingerprint(it.SAD), Kind: store.TokenSAD, ClientID: p.client, Username: p.user,
					Scopes: []string{"credential"}, CredentialID: p.credential, Hashes: [][]byte{it.Hash},
					AuthTime: now, RequestedAt: now, ExpiresAt: now.Add(tokenLife), SecretGeneration: gen,
				}); err != nil {
					return err
				}
				f.Items[i] = it
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.out, data, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "prepared=%d credential=%s file=%s\n", p.count, p.credential, p.out)
	return nil
}

func readLoadFile(path string) (*loadFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f loadFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

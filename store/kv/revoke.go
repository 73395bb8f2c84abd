package kv

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// Revocation (store.RevokeTx) walks a party index beside each kind of
// revocable record:
//
//	tokens_by_party          party ‖ token fingerprint → empty
//	codes_by_party           party ‖ code fingerprint → empty (unredeemed codes)
//	auth_requests_by_party   party ‖ request fingerprint → empty
//	sessions_by_party        party ‖ session fingerprint → empty
//
// A party (store.Party) is one tag byte, a name and 0x00; store.GrantParties
// says which parties a record hangs on.
//
// So one revocation is one cursor range per bucket, costing what it
// removes. Every write of a record maintains its entries in the same
// transaction; files written before the index existed get it from the
// schema 1 → 2 migration of a bbolt file (BuildPartyIndexes).

// The party index buckets; BucketNames registers them.
const (
	bucketTokensByParty       = "tokens_by_party"
	bucketCodesByParty        = "codes_by_party"
	bucketAuthRequestsByParty = "auth_requests_by_party"
	bucketSessionsByParty     = "sessions_by_party"
)

// index adds the entries of hash under each party.
func (t *Tx) index(bucket string, parties []string, hash []byte) error {
	for _, p := range parties {
		if err := t.putRaw(bucket, p+string(hash), []byte{}); err != nil {
			return err
		}
	}
	return nil
}

// unindex removes the entries of hash under each party.
func (t *Tx) unindex(bucket string, parties []string, hash []byte) error {
	for _, p := range parties {
		if err := t.delete(bucket, p+string(hash)); err != nil {
			return err
		}
	}
	return nil
}

// reindex moves the entries of hash from the parties in old to those in
// new.
func (t *Tx) reindex(bucket string, old, new []string, hash []byte) error {
	for _, p := range old {
		if !slices.Contains(new, p) {
			if err := t.delete(bucket, p+string(hash)); err != nil {
				return err
			}
		}
	}
	for _, p := range new {
		if !slices.Contains(old, p) {
			if err := t.putRaw(bucket, p+string(hash), []byte{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexed returns the fingerprints filed under party p in bucket. Only
// keys of exactly p ‖ 32 bytes count, so a name that is a prefix of
// another never matches the other's entries.
func (t *Tx) indexed(bucket, p string) ([][]byte, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	prefix := t.scratchKey(p)
	var out [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+sha256.Size {
			out = append(out, bytes.Clone(k[len(prefix):]))
		}
	}
	return out, nil
}

// The RevokeTx methods: each revokes one party. The two of a user also
// raise the user's secret generation (store.User.SecretGeneration), so
// that what is issued after them on the strength of a check made before
// them (a password or PIN hashed while they committed) is refused.

func (t *Tx) RevokeUser(username string) (store.Revoked, error) {
	return t.revokeUser(store.PartyUser, username)
}

func (t *Tx) RevokeUserSigning(username string) (store.Revoked, error) {
	return t.revokeUser(store.PartySigning, username)
}

// revokeUser is revoke for a party of a user, whose secret generation it
// raises when the user exists.
func (t *Tx) revokeUser(kind store.PartyKind, username string) (store.Revoked, error) {
	r, err := t.revoke(kind, username)
	if err != nil {
		return r, err
	}
	u, err := t.User(username)
	if errors.Is(err, store.ErrNotFound) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	u.SecretGeneration++
	u.UpdatedAt = t.stamp()
	return r, t.put(bucketUsers, username, userToRecord(u))
}

func (t *Tx) RevokeClient(clientID string) (store.Revoked, error) {
	return t.revoke(store.PartyClient, clientID)
}

func (t *Tx) RevokeCredential(credentialID string) (store.Revoked, error) {
	return t.revoke(store.PartyCredential, credentialID)
}

// revoke removes every record filed under the party (kind, name).
func (t *Tx) revoke(kind store.PartyKind, name string) (store.Revoked, error) {
	var r store.Revoked
	if err := t.writable(); err != nil {
		return r, err
	}
	if err := store.CheckRevokeName(name); err != nil {
		return r, err
	}
	p := store.Party(kind, name)

	hashes, err := t.indexed(bucketTokensByParty, p)
	if err != nil {
		return r, err
	}
	for _, h := range hashes {
		tok, err := t.token(h)
		if err != nil {
			return r, err
		}
		if tok == nil || !slices.Contains(tok.parties(), p) {
			// A dangling entry: drop it, count nothing.
			if err := t.delete(bucketTokensByParty, p+string(h)); err != nil {
				return r, err
			}
			continue
		}
		if err := t.DeleteToken(h); err != nil {
			return r, err
		}
		if store.TokenKind(tok.Kind) == store.TokenSAD {
			r.SADs++
		} else {
			r.AccessTokens++
		}
	}
	for _, f := range []struct {
		k expiring
		n *int
	}{{codesKind, &r.Codes}, {requestsKind, &r.Requests}, {sessionsKind, &r.Sessions}} {
		hashes, err := t.indexed(f.k.parties, p)
		if err != nil {
			return r, err
		}
		for _, h := range hashes {
			n, err := t.revokeFlow(f.k, p, h)
			if err != nil {
				return r, err
			}
			*f.n += n
		}
	}
	return r, nil
}

// revokeFlow removes the flow record h that is filed under party p and
// returns 1, or drops a dangling entry (no record, or a record that no
// longer hangs on p: a redeemed code) and returns 0.
func (t *Tx) revokeFlow(k expiring, p string, h []byte) (int, error) {
	b, err := t.bucket(k.bucket)
	if err != nil {
		return 0, err
	}
	if raw := b.Get(h); raw != nil {
		_, parties, err := k.decode(raw)
		if err != nil {
			return 0, fmt.Errorf("store: decode %s/%x: %w", k.bucket, h, err)
		}
		if slices.Contains(parties, p) {
			_, err := t.removeExpiring(k, h)
			return 1, err
		}
	}
	return 0, t.delete(k.parties, p+string(h))
}

// BuildPartyIndexes files every stored token, unredeemed code, pending
// request and session under its parties: the migration of a bbolt file
// written before the party index existed. It is idempotent.
func BuildPartyIndexes(b Backend) error {
	t := &Tx{kv: b}
	type entry struct {
		hash    []byte
		parties []string
	}
	for _, k := range []struct {
		bucket, index string
		decode        func([]byte) ([]string, error)
	}{
		{bucketTokens, bucketTokensByParty, decodeTokenParties},
		{codesKind.bucket, codesKind.parties, dropExpiry(codesKind.decode)},
		{requestsKind.bucket, requestsKind.parties, dropExpiry(requestsKind.decode)},
		{sessionsKind.bucket, sessionsKind.parties, dropExpiry(sessionsKind.decode)},
	} {
		b, err := t.bucket(k.bucket)
		if err != nil {
			return err
		}
		var entries []entry
		err = b.ForEach(func(key, v []byte) error {
			ps, err := k.decode(v)
			if err != nil {
				return fmt.Errorf("store: decode %s/%x: %w", k.bucket, key, err)
			}
			entries = append(entries, entry{bytes.Clone(key), ps})
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := t.index(k.index, e.parties, e.hash); err != nil {
				return err
			}
		}
	}
	return nil
}

func dropExpiry(decode func([]byte) (time.Time, []string, error)) func([]byte) ([]string, error) {
	return func(raw []byte) ([]string, error) {
		_, ps, err := decode(raw)
		return ps, err
	}
}

// metaRevocations is the meta key of the revocation generation
// (store.RevocationReader): 8 bytes big-endian, absent = 0.
const metaRevocations = "revocations"

// RevocationGeneration implements store.RevocationReader.
func (t *Tx) RevocationGeneration() (uint64, error) {
	b, err := t.bucket(BucketMeta)
	if err != nil {
		return 0, err
	}
	v := b.Get(t.scratchKey(metaRevocations))
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("store: %s/%s is %d bytes, want 8", BucketMeta, metaRevocations, len(v))
}

// raiseRevocations adds one to the revocation generation in this write
// transaction.
func (t *Tx) raiseRevocations() error {
	g, err := t.RevocationGeneration()
	if err != nil {
		return err
	}
	v := make([]byte, 8)
	binary.BigEndian.PutUint64(v, g+1)
	return t.putRaw(BucketMeta, metaRevocations, v)
}

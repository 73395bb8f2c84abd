package kv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// Tx implements store.Tx over one transaction of a Backend.
type Tx struct {
	kv  Backend
	now func() time.Time
	// lastToken is the token record decoded last (oauth.go).
	lastToken decodedToken
	// keyBuf backs scratchKey.
	keyBuf [64]byte
}

// scratchKey returns s as bytes in a buffer of the transaction, for a key
// only read during one Bucket call (Get, Seek): a conversion passed to an
// interface method would escape and allocate on every call. The next
// scratchKey overwrites it.
func (t *Tx) scratchKey(s string) []byte { return append(t.keyBuf[:0], s...) }

// writable returns store.ErrReadOnly inside View (Backend.Writable).
func (t *Tx) writable() error {
	return t.kv.Writable()
}

// validator is a record that checks itself (store.User, store.Token, …).
type validator interface{ Validate() error }

// checkWrite refuses the write of r: store.ErrReadOnly inside View, else
// r's own Validate error.
func (t *Tx) checkWrite(r validator) error {
	if err := t.writable(); err != nil {
		return err
	}
	return r.Validate()
}

// stamp returns the store clock in UTC, without a monotonic reading.
func (t *Tx) stamp() time.Time { return t.now().UTC().Round(0) }

// bucket returns the named bucket; a missing one means a damaged store.
func (t *Tx) bucket(name string) (Bucket, error) {
	b := t.kv.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("store: bucket %s is missing", name)
	}
	return b, nil
}

// get decodes the JSON record at key into dst; it reports false if absent.
// json.Unmarshal copies everything out of the backend's memory.
func (t *Tx) get(bucket, key string, dst any) (bool, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return false, err
	}
	v := b.Get(t.scratchKey(key))
	if v == nil {
		return false, nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return false, fmt.Errorf("store: decode %s/%q: %w", bucket, key, err)
	}
	return true, nil
}

func (t *Tx) exists(bucket, key string) (bool, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return false, err
	}
	return b.Get(t.scratchKey(key)) != nil, nil
}

func (t *Tx) put(bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s/%q: %w", bucket, key, err)
	}
	return t.putRaw(bucket, key, data)
}

// putRaw stores value, which must not be modified until the transaction ends.
func (t *Tx) putRaw(bucket, key string, value []byte) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	if bucket == bucketTokens {
		t.lastToken = decodedToken{}
	}
	if err := b.Put([]byte(key), value); err != nil {
		return fmt.Errorf("store: put %s/%q: %w", bucket, key, err)
	}
	return nil
}

func (t *Tx) delete(bucket, key string) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	if bucket == bucketTokens {
		t.lastToken = decodedToken{}
	}
	if err := b.Delete([]byte(key)); err != nil {
		return fmt.Errorf("store: delete %s/%q: %w", bucket, key, err)
	}
	return nil
}

// compositeKey joins key parts with 0x00, which validation keeps out of
// usernames and IDs.
func compositeKey(a, b string) string { return a + "\x00" + b }

// Users

func (t *Tx) User(username string) (*store.User, error) {
	var r userRecord
	ok, err := t.get(bucketUsers, username, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: user %q", store.ErrNotFound, username)
	}
	return r.user(), nil
}

// listRecords decodes every JSON record of bucket, in key order, into the
// value view makes of it.
func listRecords[R, V any](t *Tx, bucket string, view func(*R) *V) ([]V, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	out := []V{}
	err = b.ForEach(func(k, v []byte) error {
		var r R
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("store: decode %s/%q: %w", bucket, k, err)
		}
		out = append(out, *view(&r))
		return nil
	})
	return out, err
}

func (t *Tx) Users() ([]store.User, error) {
	return listRecords(t, bucketUsers, (*userRecord).user)
}

func (t *Tx) CreateUser(u *store.User) error {
	if err := t.checkWrite(u); err != nil {
		return err
	}
	if err := store.CheckNewUser(u); err != nil {
		return err
	}
	if ok, err := t.exists(bucketUsers, u.Username); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: user %q", store.ErrAlreadyExists, u.Username)
	}
	now := t.stamp()
	u.CreatedAt, u.UpdatedAt = now, now
	return t.put(bucketUsers, u.Username, userToRecord(u))
}

func (t *Tx) PutUser(u *store.User) error {
	if err := t.checkWrite(u); err != nil {
		return err
	}
	old, err := t.User(u.Username)
	if err != nil {
		return err
	}
	if err := store.ReplaceUser(old, u, t.stamp()); err != nil { // old is already a copy
		return err
	}
	if old.Status != u.Status {
		if err := t.raiseRevocations(); err != nil {
			return err
		}
	}
	return t.put(bucketUsers, u.Username, userToRecord(u))
}

func (t *Tx) PutProof(username string, p store.Proof) error {
	if err := t.checkWrite(&p); err != nil {
		return err
	}
	u, err := t.User(username)
	if err != nil {
		return err
	}
	store.RecordProof(u, p)
	// The backend keeps a reference to the value until commit: store a copy
	// so the caller may reuse p.Content.
	if err := t.putRaw(bucketProofs, compositeKey(username, p.ID), bytes.Clone(p.Content)); err != nil {
		return err
	}
	u.UpdatedAt = t.stamp()
	return t.put(bucketUsers, username, userToRecord(u))
}

func (t *Tx) Proof(username, id string) (*store.Proof, error) {
	u, err := t.User(username)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(u.Proofs, func(r store.ProofRef) bool { return r.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: proof %q of user %q", store.ErrNotFound, id, username)
	}
	b, err := t.bucket(bucketProofs)
	if err != nil {
		return nil, err
	}
	content := b.Get(t.scratchKey(compositeKey(username, id)))
	if content == nil {
		return nil, fmt.Errorf("store: proof %q of user %q is listed but its content is missing", id, username)
	}
	return &store.Proof{ProofRef: u.Proofs[i], Content: bytes.Clone(content)}, nil
}

func (t *Tx) DeleteUser(username string) error {
	if err := t.writable(); err != nil {
		return err
	}
	u, err := t.User(username)
	if err != nil {
		return err
	}
	if owned, err := t.Credentials(username, "", 1); err != nil {
		return err
	} else if len(owned) > 0 {
		return fmt.Errorf("%w: user %q still owns credentials", store.ErrInvalid, username)
	}
	for _, p := range u.Proofs {
		if err := t.delete(bucketProofs, compositeKey(username, p.ID)); err != nil {
			return err
		}
	}
	if err := t.raiseRevocations(); err != nil {
		return err
	}
	return t.delete(bucketUsers, username)
}

// Clients

func (t *Tx) Client(id string) (*store.Client, error) {
	var r clientRecord
	ok, err := t.get(bucketClients, id, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: client %q", store.ErrNotFound, id)
	}
	return r.client(), nil
}

func (t *Tx) Clients() ([]store.Client, error) {
	return listRecords(t, bucketClients, (*clientRecord).client)
}

func (t *Tx) CreateClient(c *store.Client) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	if ok, err := t.exists(bucketClients, c.ID); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: client %q", store.ErrAlreadyExists, c.ID)
	}
	now := t.stamp()
	c.CreatedAt, c.UpdatedAt = now, now
	return t.put(bucketClients, c.ID, clientToRecord(c))
}

func (t *Tx) PutClient(c *store.Client) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	old, err := t.Client(c.ID)
	if err != nil {
		return err
	}
	c.CreatedAt, c.UpdatedAt = old.CreatedAt, t.stamp()
	if err := t.raiseRevocations(); err != nil {
		return err
	}
	return t.put(bucketClients, c.ID, clientToRecord(c))
}

func (t *Tx) DeleteClient(id string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if ok, err := t.exists(bucketClients, id); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: client %q", store.ErrNotFound, id)
	}
	if err := t.raiseRevocations(); err != nil {
		return err
	}
	return t.delete(bucketClients, id)
}

// Credentials

func (t *Tx) Credential(id string) (*store.Credential, error) {
	var r credentialRecord
	ok, err := t.get(bucketCredentials, id, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: credential %q", store.ErrNotFound, id)
	}
	return r.credential(), nil
}

// checkOwner refuses a credential whose owner is not a user.
func (t *Tx) checkOwner(c *store.Credential) error {
	ok, err := t.exists(bucketUsers, c.Owner)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: credential %q: owner %q does not exist", store.ErrInvalid, c.ID, c.Owner)
	}
	return nil
}

func (t *Tx) CreateCredential(c *store.Credential) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	if err := t.checkOwner(c); err != nil {
		return err
	}
	if ok, err := t.exists(bucketCredentials, c.ID); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: credential %q", store.ErrAlreadyExists, c.ID)
	}
	now := t.stamp()
	c.CreatedAt, c.UpdatedAt = now, now
	if err := t.put(bucketCredentials, c.ID, credentialToRecord(c)); err != nil {
		return err
	}
	return t.putRaw(bucketCredsByOwner, compositeKey(c.Owner, c.ID), []byte{})
}

func (t *Tx) PutCredential(c *store.Credential) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	old, err := t.Credential(c.ID)
	if err != nil {
		return err
	}
	if err := store.CheckCredentialChange(old, c); err != nil {
		return err
	}
	if err := t.checkOwner(c); err != nil {
		return err
	}
	if old.Owner != c.Owner {
		if err := t.delete(bucketCredsByOwner, compositeKey(old.Owner, c.ID)); err != nil {
			return err
		}
		if err := t.putRaw(bucketCredsByOwner, compositeKey(c.Owner, c.ID), []byte{}); err != nil {
			return err
		}
	}
	c.CreatedAt, c.UpdatedAt = old.CreatedAt, t.stamp()
	return t.put(bucketCredentials, c.ID, credentialToRecord(c))
}

func (t *Tx) DeleteCredential(id string) error {
	if err := t.writable(); err != nil {
		return err
	}
	c, err := t.Credential(id)
	if err != nil {
		return err
	}
	if err := t.delete(bucketCredsByOwner, compositeKey(c.Owner, id)); err != nil {
		return err
	}
	return t.delete(bucketCredentials, id)
}

func (t *Tx) Credentials(owner, after string, limit int) ([]store.Credential, error) {
	if owner == "" {
		return t.allCredentials(after, limit)
	}
	if err := store.ValidateUsername(owner); err != nil {
		return nil, err
	}
	index, err := t.bucket(bucketCredsByOwner)
	if err != nil {
		return nil, err
	}
	creds, err := t.bucket(bucketCredentials)
	if err != nil {
		return nil, err
	}
	prefix := []byte(compositeKey(owner, ""))
	start := t.scratchKey(compositeKey(owner, after))
	out := []store.Credential{}
	c := index.Cursor()
	k, _ := c.Seek(start)
	if after != "" && bytes.Equal(k, start) {
		k, _ = c.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if limit > 0 && len(out) >= limit {
			break
		}
		id := k[len(prefix):]
		v := creds.Get(id)
		if v == nil {
			return nil, fmt.Errorf("store: owner index of %q names missing credential %q", owner, id)
		}
		var r credentialRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, fmt.Errorf("store: decode %s/%q: %w", bucketCredentials, id, err)
		}
		out = append(out, *r.credential())
	}
	return out, nil
}

// allCredentials is the admin listing: a scan of the credentials bucket.
func (t *Tx) allCredentials(after string, limit int) ([]store.Credential, error) {
	creds, err := t.bucket(bucketCredentials)
	if err != nil {
		return nil, err
	}
	out := []store.Credential{}
	c := creds.Cursor()
	var k, v []byte
	if after == "" {
		k, v = c.First()
	} else {
		k, v = c.Seek(t.scratchKey(after))
		if bytes.Equal(k, []byte(after)) {
			k, v = c.Next()
		}
	}
	for ; k != nil; k, v = c.Next() {
		if limit > 0 && len(out) >= limit {
			break
		}
		var r credentialRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, fmt.Errorf("store: decode %s/%q: %w", bucketCredentials, k, err)
		}
		out = append(out, *r.credential())
	}
	return out, nil
}

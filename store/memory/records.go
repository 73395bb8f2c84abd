package memory

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/signd/signd/store"
)

// Users, proofs, clients and credentials. Every check and error is bolt's:
// the record's Validate, then the store's own rules (existence, immutable
// fields, the owner of a credential).

// User implements store.Tx.
func (t *tx) User(username string) (*store.User, error) {
	u, ok := t.s.users.get(username)
	if !ok {
		return nil, fmt.Errorf("%w: user %q", store.ErrNotFound, username)
	}
	return cloneUser(u), nil
}

// Users implements store.Tx.
func (t *tx) Users() ([]store.User, error) {
	users := []store.User{}
	t.s.users.all(func(_ string, u *store.User) bool {
		users = append(users, *cloneUser(u))
		return true
	})
	return users, nil
}

// CreateUser implements store.Tx.
func (t *tx) CreateUser(u *store.User) error {
	if err := t.checkWrite(u); err != nil {
		return err
	}
	if err := store.CheckNewUser(u); err != nil {
		return err
	}
	if t.s.users.has(u.Username) {
		return fmt.Errorf("%w: user %q", store.ErrAlreadyExists, u.Username)
	}
	now := t.stamp()
	u.CreatedAt, u.UpdatedAt = now, now
	t.s.users.put(u.Username, cloneUser(u))
	return nil
}

// PutUser implements store.Tx.
func (t *tx) PutUser(u *store.User) error {
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
		t.s.revocations++
	}
	t.s.users.put(u.Username, cloneUser(u))
	return nil
}

// PutProof implements store.Tx.
func (t *tx) PutProof(username string, p store.Proof) error {
	if err := t.checkWrite(&p); err != nil {
		return err
	}
	u, err := t.User(username)
	if err != nil {
		return err
	}
	store.RecordProof(u, p)
	t.s.proofs.put(compositeKey(username, p.ID), bytes.Clone(p.Content))
	u.UpdatedAt = t.stamp()
	t.s.users.put(username, u) // u is this transaction's own copy
	return nil
}

// Proof implements store.Tx.
func (t *tx) Proof(username, id string) (*store.Proof, error) {
	u, ok := t.s.users.get(username)
	if !ok {
		return nil, fmt.Errorf("%w: user %q", store.ErrNotFound, username)
	}
	i := slices.IndexFunc(u.Proofs, func(r store.ProofRef) bool { return r.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: proof %q of user %q", store.ErrNotFound, id, username)
	}
	content, ok := t.s.proofs.get(compositeKey(username, id))
	if !ok {
		return nil, fmt.Errorf("store: proof %q of user %q is listed but its content is missing", id, username)
	}
	return &store.Proof{ProofRef: u.Proofs[i], Content: bytes.Clone(content)}, nil
}

// DeleteUser implements store.Tx.
func (t *tx) DeleteUser(username string) error {
	if err := t.writes(); err != nil {
		return err
	}
	u, ok := t.s.users.get(username)
	if !ok {
		return fmt.Errorf("%w: user %q", store.ErrNotFound, username)
	}
	if t.owns(username) {
		return fmt.Errorf("%w: user %q still owns credentials", store.ErrInvalid, username)
	}
	for _, p := range u.Proofs {
		t.s.proofs.delete(compositeKey(username, p.ID))
	}
	t.s.revocations++
	t.s.users.delete(username)
	return nil
}

// owns reports whether the owner index lists a credential of username.
func (t *tx) owns(username string) bool {
	found := false
	prefix := compositeKey(username, "")
	t.s.credsByOwner.from(prefix, func(k string, _ struct{}) bool {
		found = strings.HasPrefix(k, prefix)
		return false
	})
	return found
}

// Client implements store.Tx.
func (t *tx) Client(id string) (*store.Client, error) {
	c, ok := t.s.clients.get(id)
	if !ok {
		return nil, fmt.Errorf("%w: client %q", store.ErrNotFound, id)
	}
	return cloneClient(c), nil
}

// Clients implements store.Tx.
func (t *tx) Clients() ([]store.Client, error) {
	clients := []store.Client{}
	t.s.clients.all(func(_ string, c *store.Client) bool {
		clients = append(clients, *cloneClient(c))
		return true
	})
	return clients, nil
}

// CreateClient implements store.Tx.
func (t *tx) CreateClient(c *store.Client) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	if t.s.clients.has(c.ID) {
		return fmt.Errorf("%w: client %q", store.ErrAlreadyExists, c.ID)
	}
	now := t.stamp()
	c.CreatedAt, c.UpdatedAt = now, now
	t.s.clients.put(c.ID, cloneClient(c))
	return nil
}

// PutClient implements store.Tx.
func (t *tx) PutClient(c *store.Client) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	old, ok := t.s.clients.get(c.ID)
	if !ok {
		return fmt.Errorf("%w: client %q", store.ErrNotFound, c.ID)
	}
	c.CreatedAt, c.UpdatedAt = old.CreatedAt, t.stamp()
	t.s.revocations++
	t.s.clients.put(c.ID, cloneClient(c))
	return nil
}

// DeleteClient implements store.Tx.
func (t *tx) DeleteClient(id string) error {
	if err := t.writes(); err != nil {
		return err
	}
	if !t.s.clients.has(id) {
		return fmt.Errorf("%w: client %q", store.ErrNotFound, id)
	}
	t.s.revocations++
	t.s.clients.delete(id)
	return nil
}

// Credential implements store.Tx.
func (t *tx) Credential(id string) (*store.Credential, error) {
	c, ok := t.s.credentials.get(id)
	if !ok {
		return nil, fmt.Errorf("%w: credential %q", store.ErrNotFound, id)
	}
	return cloneCredential(c), nil
}

// checkOwner refuses a credential whose owner is not a user.
func (t *tx) checkOwner(c *store.Credential) error {
	if !t.s.users.has(c.Owner) {
		return fmt.Errorf("%w: credential %q: owner %q does not exist", store.ErrInvalid, c.ID, c.Owner)
	}
	return nil
}

// CreateCredential implements store.Tx.
func (t *tx) CreateCredential(c *store.Credential) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	if err := t.checkOwner(c); err != nil {
		return err
	}
	if t.s.credentials.has(c.ID) {
		return fmt.Errorf("%w: credential %q", store.ErrAlreadyExists, c.ID)
	}
	now := t.stamp()
	c.CreatedAt, c.UpdatedAt = now, now
	t.s.credentials.put(c.ID, cloneCredential(c))
	t.s.credsByOwner.add(compositeKey(c.Owner, c.ID))
	return nil
}

// PutCredential implements store.Tx.
func (t *tx) PutCredential(c *store.Credential) error {
	if err := t.checkWrite(c); err != nil {
		return err
	}
	old, ok := t.s.credentials.get(c.ID)
	if !ok {
		return fmt.Errorf("%w: credential %q", store.ErrNotFound, c.ID)
	}
	if err := store.CheckCredentialChange(old, c); err != nil {
		return err
	}
	if err := t.checkOwner(c); err != nil {
		return err
	}
	if old.Owner != c.Owner {
		t.s.credsByOwner.delete(compositeKey(old.Owner, c.ID))
		t.s.credsByOwner.add(compositeKey(c.Owner, c.ID))
	}
	c.CreatedAt, c.UpdatedAt = old.CreatedAt, t.stamp()
	t.s.credentials.put(c.ID, cloneCredential(c))
	return nil
}

// DeleteCredential implements store.Tx.
func (t *tx) DeleteCredential(id string) error {
	if err := t.writes(); err != nil {
		return err
	}
	c, ok := t.s.credentials.get(id)
	if !ok {
		return fmt.Errorf("%w: credential %q", store.ErrNotFound, id)
	}
	t.s.credsByOwner.delete(compositeKey(c.Owner, id))
	t.s.credentials.delete(id)
	return nil
}

// Credentials implements store.Tx: owner "" scans every credential (admin
// listings), otherwise a range of the owner index that costs the page, not
// what others own.
func (t *tx) Credentials(owner, after string, limit int) ([]store.Credential, error) {
	out := []store.Credential{}
	full := func() bool { return limit > 0 && len(out) >= limit }
	if owner == "" {
		t.s.credentials.from(after, func(id string, c *store.Credential) bool {
			if after != "" && id == after {
				return true
			}
			if full() {
				return false
			}
			out = append(out, *cloneCredential(c))
			return true
		})
		return out, nil
	}
	if err := store.ValidateUsername(owner); err != nil {
		return nil, err
	}
	prefix := compositeKey(owner, "")
	start := compositeKey(owner, after)
	var err error
	t.s.credsByOwner.from(start, func(k string, _ struct{}) bool {
		if !strings.HasPrefix(k, prefix) || full() {
			return false
		}
		if after != "" && k == start {
			return true
		}
		id := k[len(prefix):]
		c, ok := t.s.credentials.get(id)
		if !ok {
			err = fmt.Errorf("store: owner index of %q names missing credential %q", owner, id)
			return false
		}
		out = append(out, *cloneCredential(c))
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

package kv

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// Admin requests (dual control) live in bucketAdminRequests under their ID.
// They are few (store.MaxAdminRequests at most), so listing and sweeping
// walk the bucket rather than keep an expiry index.
const bucketAdminRequests = "admin_requests"

type adminRequestRecord struct {
	ID        string          `json:"id"`
	Op        string          `json:"op"`
	Request   json.RawMessage `json:"request"`
	Actor     string          `json:"actor"`
	Party     string          `json:"party"`
	Roles     []string        `json:"roles,omitempty"`
	Certs     [][]byte        `json:"certs,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
}

func adminRequestToRecord(r *store.AdminRequest) *adminRequestRecord {
	return &adminRequestRecord{
		ID: r.ID, Op: r.Op, Request: r.Request, Actor: r.Actor, Party: r.Party, Roles: r.Roles, Certs: r.Certs,
		CreatedAt: r.CreatedAt.UTC().Round(0), ExpiresAt: r.ExpiresAt.UTC().Round(0),
	}
}

func (r *adminRequestRecord) adminRequest() *store.AdminRequest {
	return &store.AdminRequest{
		ID: r.ID, Op: r.Op, Request: r.Request, Actor: r.Actor, Party: r.Party, Roles: r.Roles, Certs: r.Certs,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
	}
}

// AdminRequest implements store.AdminRequestTx.
func (t *Tx) AdminRequest(id string) (*store.AdminRequest, error) {
	var r adminRequestRecord
	ok, err := t.get(bucketAdminRequests, id, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: admin request %q", store.ErrNotFound, id)
	}
	return r.adminRequest(), nil
}

// AdminRequests implements store.AdminRequestTx.
func (t *Tx) AdminRequests() ([]store.AdminRequest, error) {
	reqs, err := listRecords(t, bucketAdminRequests, (*adminRequestRecord).adminRequest)
	slices.SortFunc(reqs, func(a, b store.AdminRequest) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return reqs, err
}

// CreateAdminRequest implements store.AdminRequestTx.
func (t *Tx) CreateAdminRequest(r *store.AdminRequest) error {
	if err := t.checkWrite(r); err != nil {
		return err
	}
	if ok, err := t.exists(bucketAdminRequests, r.ID); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: admin request %q", store.ErrAlreadyExists, r.ID)
	}
	b, err := t.bucket(bucketAdminRequests)
	if err != nil {
		return err
	}
	n := 0
	if err := b.ForEach(func(_, _ []byte) error { n++; return nil }); err != nil {
		return err
	}
	if n >= store.MaxAdminRequests {
		return fmt.Errorf("%w: %d admin requests are waiting already: approve, reject or let them expire first",
			store.ErrInvalid, n)
	}
	return t.put(bucketAdminRequests, r.ID, adminRequestToRecord(r))
}

// DeleteAdminRequest implements store.AdminRequestTx.
func (t *Tx) DeleteAdminRequest(id string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if ok, err := t.exists(bucketAdminRequests, id); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: admin request %q", store.ErrNotFound, id)
	}
	return t.delete(bucketAdminRequests, id)
}

// expireAdminRequests removes at most limit admin requests that expired at
// or before now, earliest first, and appends a pending_expired audit entry
// for each: the sweeper's last kind (SweepExpired).
func (t *Tx) expireAdminRequests(now time.Time, limit int) (int, error) {
	reqs, err := t.AdminRequests()
	if err != nil {
		return 0, err
	}
	reqs = slices.DeleteFunc(reqs, func(r store.AdminRequest) bool { return r.ExpiresAt.After(now) })
	slices.SortFunc(reqs, func(a, b store.AdminRequest) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	n := 0
	for _, r := range reqs[:min(len(reqs), limit)] {
		if err := t.delete(bucketAdminRequests, r.ID); err != nil {
			return n, err
		}
		if err := t.AppendAudit(store.AdminRequestExpired(&r, now)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

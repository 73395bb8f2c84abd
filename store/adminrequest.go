package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// AdminRequest is an administrative act under dual control that waits for
// a second operator (admin.dual_control): the operation, its JSON request
// (never one that carries a secret: the admin package refuses to hold
// those), who asked, and until when it may be approved. Approving,
// rejecting or expiring it deletes it; the audit log keeps its history.
type AdminRequest struct {
	// ID is random and unguessable (NewID): it is the record's key.
	ID string
	// Op is the admin operation's name, e.g. "RemoveCredential".
	Op string
	// Request is the operation's request as one JSON value, at most
	// MaxAdminRequestSize bytes.
	Request json.RawMessage
	// Actor, Party and Roles are the requester's principal: how the audit
	// log names them, the person behind them (dual control compares it
	// with the approver's), and the roles they held when they asked.
	Actor string
	Party string
	Roles []string
	// Certs is the requester's client certificate chain (DER, their
	// certificate first) when they asked through the provisioning API:
	// the approval asks whether it is still admitted. Empty otherwise.
	Certs [][]byte
	// CreatedAt is when the request was made; ExpiresAt when it can no
	// longer be approved (the sweeper removes it from then on).
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Limits of admin requests.
const (
	// MaxAdminRequestSize bounds AdminRequest.Request: the requests that
	// may wait name records and options, never documents.
	MaxAdminRequestSize = 64 << 10
	// MaxAdminRequests bounds how many admin requests wait at once, so
	// that listing and sweeping them stays cheap.
	MaxAdminRequests = 1000
	maxAdminRoles    = 16
	// maxAdminCerts and maxAdminCertSize bound AdminRequest.Certs.
	maxAdminCerts    = 8
	maxAdminCertSize = 16 << 10
)

// Validate checks every field of r. Errors wrap ErrInvalid.
func (r *AdminRequest) Validate() error {
	if err := validateKey("admin request ID", r.ID); err != nil {
		return err
	}
	if err := validateKey("admin request operation", r.Op); err != nil {
		return err
	}
	for _, t := range []struct{ what, s string }{{"admin request actor", r.Actor}, {"admin request party", r.Party}} {
		if t.s == "" {
			return invalid("%s is empty", t.what)
		}
		if err := validateText(t.what, t.s, maxTextLen); err != nil {
			return err
		}
	}
	if len(r.Roles) > maxAdminRoles {
		return invalid("admin request %q has more than %d roles", r.ID, maxAdminRoles)
	}
	for _, role := range r.Roles {
		if err := validateKey("admin request role", role); err != nil {
			return err
		}
	}
	if len(r.Certs) > maxAdminCerts {
		return invalid("admin request %q has more than %d certificates", r.ID, maxAdminCerts)
	}
	for _, c := range r.Certs {
		if len(c) == 0 || len(c) > maxAdminCertSize {
			return invalid("admin request %q: a certificate must be 1 to %d bytes", r.ID, maxAdminCertSize)
		}
	}
	return firstBroken(
		must(len(r.Request) > 0 && len(r.Request) <= MaxAdminRequestSize,
			fmt.Sprintf("admin request %q: the request must be 1 to %d bytes", r.ID, MaxAdminRequestSize)),
		must(json.Valid(r.Request), fmt.Sprintf("admin request %q: the request is not one JSON value", r.ID)),
		must(!r.CreatedAt.IsZero(), fmt.Sprintf("admin request %q has no creation time", r.ID)),
		must(r.ExpiresAt.After(r.CreatedAt), fmt.Sprintf("admin request %q expires before it is created", r.ID)),
	)
}

// AdminRequestTx holds the admin requests waiting for a second operator.
type AdminRequestTx interface {
	// AdminRequest returns the admin request with that ID, or ErrNotFound.
	AdminRequest(id string) (*AdminRequest, error)
	// AdminRequests returns every admin request, expired ones included
	// (until swept), oldest first.
	AdminRequests() ([]AdminRequest, error)
	// CreateAdminRequest validates and stores a new admin request
	// (ErrAlreadyExists if the ID is taken; ErrInvalid when
	// MaxAdminRequests wait already).
	CreateAdminRequest(r *AdminRequest) error
	// DeleteAdminRequest removes an admin request, or returns ErrNotFound:
	// of two transactions deciding the same request, one finds it.
	DeleteAdminRequest(id string) error
}

// AdminRequestExpired is the audit entry (pending_expired, by the daemon)
// of an admin request removed unapproved after its expiry, at now: by the
// sweeper, or by an approval that came too late.
func AdminRequestExpired(r *AdminRequest, now time.Time) *AuditEntry {
	return &AuditEntry{Time: now, Kind: AuditPendingExpired, Actor: "signd", Outcome: AuditOK,
		Reason: "not approved before " + r.ExpiresAt.UTC().Format(time.RFC3339),
		Fields: map[string]string{"id": r.ID, "op": r.Op, "requested_by": r.Actor}}
}

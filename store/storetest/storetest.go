package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Full is a store with everything the suites check: the store.Store
// contract, Batch and named keys. Every backend the product ships is one.
type Full interface {
	Batcher
	Secrets
}

// Opener opens a backend's new, empty store for one subtest, stamping
// records with now (nil: the wall clock, time.Now), and registers its
// Close with t.Cleanup. A backend's test passes the same Opener to every
// suite.
type Opener func(t *testing.T, now func() time.Time) Full

// Run runs the conformance suite against a fresh store per subtest,
// stamping with the wall clock.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Users", testUsers},
		{"Clients", testClients},
		{"Credentials", testCredentials},
		{"CredentialAlgorithms", testCredentialAlgorithms},
		{"CredentialModes", testCredentialModes},
		{"Proofs", testProofs},
		{"ReadOnly", testReadOnly},
		{"RollbackOnError", testRollbackOnError},
		{"RollbackOnPanic", testRollbackOnPanic},
		{"Fence", testFence},
		{"Copies", testCopies},
		{"OwnerIndex", testOwnerIndex},
		{"OwnerIndexPaging", testOwnerIndexPaging},
		{"OwnerChange", testOwnerChange},
		{"AllCredentialsPaging", testAllCredentialsPaging},
		{"WallClockTimestamps", testWallClockTimestamps},
		{"InvalidUsers", testInvalidUsers},
		{"InvalidClients", testInvalidClients},
		{"InvalidCredentials", testInvalidCredentials},
		{"InvalidProofs", testInvalidProofs},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"CanceledContext", testCanceledContext},
		{"Tokens", testTokens},
		{"TokensByCode", testTokensByCode},
		{"RefreshTokens", testRefreshTokens},
		{"TOTPLastStep", testTOTPLastStep},
		{"SecretGeneration", testSecretGeneration},
		{"ExpiredTokens", testExpiredTokens},
		{"ConcurrentConsume", testConcurrentConsume},
		{"AuditAppend", testAuditAppend},
		{"AuditRollback", testAuditRollback},
		{"AuditInvalid", testAuditInvalid},
		{"AuditTimestamp", testAuditTimestamp},
		{"AuditConcurrent", testAuditConcurrent},
		{"AuditCanonical", testAuditCanonical},
		{"AuditChainsOne", testAuditChainsOne},
		{"AuthRequests", testAuthRequests},
		{"Codes", testCodes},
		{"Sessions", testSessions},
		{"ExpiredFlows", testExpiredFlows},
		{"SweepExpired", testSweepExpired},
		{"ConcurrentRedeem", testConcurrentRedeem},
		{"SigningKeys", testSigningKeys},
		{"Revoke", testRevoke},
		{"RevokeAfterDelete", testRevokeAfterDelete},
		{"RevokeInvalid", testRevokeInvalid},
		{"RevocationGeneration", testRevocationGeneration},
		{"DeleteUserAndCredential", testDeleteUserAndCredential},
		{"InvalidSigningKeys", testInvalidSigningKeys},
		{"AdminRequests", testAdminRequests},
		{"InvalidAdminRequests", testInvalidAdminRequests},
		{"AdminRequestLimit", testAdminRequestLimit},
		{"AdminRequestSweep", testAdminRequestSweep},
		{"ConcurrentAdminDecide", testConcurrentAdminDecide},
		{"Isolation", testIsolation},
		{"ConsistentReads", testConsistentReads},
		{"RollbackIndexes", testRollbackIndexes},
		{"CopiesOAuth", testCopiesOAuth},
		{"ReadOnlyAll", testReadOnlyAll},
		{"Close", testClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t, nil)) })
	}
}

// RunClock runs the tests that need to control the store's clock: the
// stores open opens stamp CreatedAt/UpdatedAt with the suite's Clock.
func RunClock(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, c *Clock)
	}{
		{"Timestamps", testTimestamps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClock(time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC))
			tt.fn(t, open(t, c.Now), c)
		})
	}
}

// Clock is a settable clock, safe for concurrent use. The conformance suite
// drives store expiry with it; the service tests share it for their injected
// clocks, so expiry tests never sleep.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Fixtures.

// lowArgon2 keeps hashing cheap in tests; production uses
// store.DefaultArgon2Params.
func lowArgon2() store.Argon2Params {
	return store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}
}

func mustHash(t *testing.T, secret string) string {
	t.Helper()
	h, err := store.HashPassword(lowArgon2(), []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustID(t *testing.T) string {
	t.Helper()
	id, err := store.NewID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func newUser(t *testing.T, username string) *store.User {
	t.Helper()
	return &store.User{
		ID:            mustID(t),
		Username:      username,
		Status:        store.UserActive,
		PasswordHash:  mustHash(t, "correct horse"),
		PINHash:       mustHash(t, "123456"),
		TOTPSecret:    "JBSWY3DPEHPK3PXP",
		Email:         username + "@example.com",
		EmailVerified: true,
		Claims:        map[string]string{"given_name": "Ann", "birthdate": "1990-01-31"},
	}
}

func newClient(id string) *store.Client {
	return &store.Client{
		ID:               id,
		Name:             "Client " + id,
		SecretHash:       store.HashSecret("secret-of-" + id),
		RedirectURIs:     []string{"https://rp.example.com/cb", "com.example.app:/oauth"},
		Scopes:           []string{"service", "credential", "openid"},
		SectorIdentifier: "rp.example.com",
		RequirePKCE:      true,
		// Not the default: a backend that drops the field fails the
		// round trip.
		IDTokenSignedResponseAlg: store.JWSES256,
	}
}

func newCredential(id, owner string) *store.Credential {
	return &store.Credential{
		ID:          id,
		Owner:       owner,
		KeyID:       []byte("key-" + id),
		Label:       "label " + id,
		Algorithm:   store.AlgRSA2048,
		KeyBits:     2048,
		Status:      store.CredentialPending,
		Description: "test key",
	}
}

// Helpers.

func update(t *testing.T, s store.Store, fn func(tx store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// updateRolledBack runs fn in an Update that then fails, so that all fn
// wrote must be rolled back; an error of fn fails the test.
func updateRolledBack(t *testing.T, s store.Store, fn func(tx store.Tx) error) {
	t.Helper()
	errRollback := errors.New("roll back")
	err := s.Update(context.Background(), func(tx store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("Update = %v", err)
	}
}

func view(t *testing.T, s store.Store, fn func(tx store.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

func createUsers(t *testing.T, s store.Store, names ...string) {
	t.Helper()
	update(t, s, func(tx store.Tx) error {
		for _, n := range names {
			if err := tx.CreateUser(newUser(t, n)); err != nil {
				return err
			}
		}
		return nil
	})
}

func getUser(t *testing.T, s store.Store, username string) *store.User {
	t.Helper()
	var u *store.User
	view(t, s, func(tx store.Tx) (err error) { u, err = tx.User(username); return err })
	return u
}

func getCredential(t *testing.T, s store.Store, id string) *store.Credential {
	t.Helper()
	var c *store.Credential
	view(t, s, func(tx store.Tx) (err error) { c, err = tx.Credential(id); return err })
	return c
}

func listCredentials(t *testing.T, s store.Store, owner, after string, limit int) []store.Credential {
	t.Helper()
	var cs []store.Credential
	view(t, s, func(tx store.Tx) (err error) { cs, err = tx.Credentials(owner, after, limit); return err })
	return cs
}

func credentialIDs(cs []store.Credential) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// wantInvalid creates, for each entry of bad, a fresh record (fresh(name))
// changed by the entry's mutation, and wants create to refuse it with
// store.ErrInvalid.
func wantInvalid[R any](t *testing.T, s store.Store, bad map[string]func(R), fresh func(name string) R, create func(tx store.Tx, r R) error) {
	t.Helper()
	for name, mutate := range bad {
		r := fresh(name)
		mutate(r)
		err := s.Update(context.Background(), func(tx store.Tx) error { return create(tx, r) })
		wantErr(t, name, err, store.ErrInvalid)
	}
}

// sameTimes reports whether two pairs of timestamps denote the same instants.
func sameTimes(a1, a2, b1, b2 time.Time) bool { return a1.Equal(b1) && a2.Equal(b2) }

// The equal* helpers compare records, treating times by instant and nil and
// empty slices or maps alike; they return "" or a description of the
// difference.

func equalUser(got, want *store.User) string {
	return equalStamped(*got, *want, func(u *store.User) (*time.Time, *time.Time) { return &u.CreatedAt, &u.UpdatedAt },
		func(u *store.User) {
			if len(u.Claims) == 0 {
				u.Claims = nil
			}
			if len(u.Proofs) == 0 {
				u.Proofs = nil
			}
		})
}

func equalClient(got, want *store.Client) string {
	return equalStamped(*got, *want, func(c *store.Client) (*time.Time, *time.Time) { return &c.CreatedAt, &c.UpdatedAt },
		func(c *store.Client) {
			if len(c.Scopes) == 0 {
				c.Scopes = nil
			}
		})
}

func equalCredential(got, want *store.Credential) string {
	return equalStamped(*got, *want, func(c *store.Credential) (*time.Time, *time.Time) { return &c.CreatedAt, &c.UpdatedAt },
		func(c *store.Credential) {
			if len(c.Chain) == 0 {
				c.Chain = nil
			}
			c.SetDefaults() // testCredentialModes checks the defaults themselves
		})
}

// equalStamped compares two copies of a record: the timestamps stamps
// points at by instant, the rest with reflect.DeepEqual after empty resets
// the slices and maps that may be nil or empty alike.
func equalStamped[R any](got, want R, stamps func(*R) (created, updated *time.Time), empty func(*R)) string {
	gc, gu := stamps(&got)
	wc, wu := stamps(&want)
	if !sameTimes(*gc, *gu, *wc, *wu) {
		return fmt.Sprintf("timestamps %v/%v, want %v/%v", *gc, *gu, *wc, *wu)
	}
	for _, r := range []*R{&got, &want} {
		c, u := stamps(r)
		*c, *u = time.Time{}, time.Time{}
		empty(r)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("\n got %+v\nwant %+v", got, want)
	}
	return ""
}

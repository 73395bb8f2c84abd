package passwords

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/signd/signd/store"
)

// Lockout under concurrency (OWASP Authentication Cheat Sheet, "Account
// Lockout"): at most oauth.max_failures guesses of a password or signing
// PIN are ever evaluated between two successes (or, for a password,
// between a success or the end of a timed lock and the next lock), however
// many arrive at once. Every guess first reserves a failure, in the same
// write transaction that checks the lock, before its argon2id hash runs:
//
//  1. reserve (one write transaction): read the user; a timed password
//     lock that is over at the injected clock's now is cleared, and the
//     counter set to the guesses still in flight. If the secret is locked,
//     or the failure counter already reached MaxFailures (failures
//     finished plus guesses in flight), answer "locked" without hashing.
//     Otherwise count the guess as a failure now (counter+1) and register it
//     as in flight.
//  2. hash, outside any transaction (bounded by the limiter).
//  3. settle (one write transaction): a wrong guess keeps its reservation —
//     it is a counted failure — and sets the lock (Checker.lock: timed for a
//     password, permanent for a PIN) when the counter reached MaxFailures.
//     A right guess releases its reservation and resets the counter to the
//     guesses still in flight (they count as failures until they finish);
//     a right password while the account is locked is settled as wrong.
//  4. the write transaction that ends the step (opens the login session,
//     issues the code) re-checks the account's permanent lock and the PIN
//     lock and refuses if one was set meanwhile; the token endpoint
//     re-checks the PIN lock once more when a PIN-verified code is
//     redeemed. A timed lock set after a right password settled does not
//     undo that login: the password was checked before the lock.
//
// A reset lands between the steps (an admin's set-pin or set-password,
// or a revocation of the user's grants, while the old secret is hashed):
// the store raises the user's secret generation in the reset's
// transaction (store.User.SecretGeneration). Step 3 compares the
// generation and the hash it reads with those reserve read, and settles
// a guess checked against a secret that is no longer the one stored as
// not accepted, counting nothing (whySecretChanged); step 4 compares the
// generation the check read (the user CheckPIN and Login return) with
// the stored one and refuses what would be issued on the old secret's
// strength (a session, a code, a SAD). A new secret is tried again by the
// user: the old one is no longer right.
//
// Because reserve is one serialized write transaction, of N concurrent
// guesses for a user at most MaxFailures−counter pass step 1; the rest are
// answered "locked" without an evaluation. Interleavings, with
// MaxFailures 3:
//
//   - Three wrong guesses in flight (counter 3), a fourth arrives: it is
//     "locked" without hashing, even before the lock is written. The first
//     of the three to finish sees counter 3 ≥ 3 and sets the lock; all
//     three answer "locked".
//   - The right PIN is reserved (counter 1), then two wrong ones (counter
//     3); a further guess, even the right PIN, is "locked". If the wrong
//     ones settle first they lock (the right guess in flight still counts
//     as a failure), and the right PIN, settling later, is refused when
//     the code would be issued: access_denied. If the right PIN settles
//     first the counter becomes 2 (the two in flight); when they settle
//     wrong, the counter stays 2 and nothing is locked: one more wrong
//     guess locks.
//   - The lock is set by another request (or an admin) after a guess was
//     reserved: a right password settles as a wrong one (the login page's
//     answer to a wrong password); a right PIN settles, and the step's
//     final transaction sees the lock and refuses: no code.
//   - A timed password lock ends (the clock reaches PasswordLockedUntil)
//     while N guesses arrive at once: the first to reserve clears it, and
//     as above at most MaxFailures of the N are evaluated; reaching the
//     limit locks again, for twice as long.
//   - The process dies after a reservation: the guess stays counted as a
//     failure (fail closed). The in-flight register lives in memory, so
//     after a restart the counter holds finished failures only; if it
//     reached MaxFailures without the lock being written, the next reserve
//     writes the lock.
//   - No hashing slot frees up in time (limiter busy) or the client went
//     away before the hash ran: the guess was not evaluated and its
//     reservation is returned.
//
// The in-flight register is per Checker: one Checker serves a store (bbolt
// admits one process).
type inflight struct {
	mu sync.Mutex
	n  map[inflightKey]int
}

type inflightKey struct {
	kind     secretKind
	username string
}

// add changes the number of guesses in flight for k by d and returns the
// new number.
func (in *inflight) add(k inflightKey, d int) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.n == nil {
		in.n = map[inflightKey]int{}
	}
	n := in.n[k] + d
	if n <= 0 {
		delete(in.n, k)
		return 0
	}
	in.n[k] = n
	return n
}

// count returns the number of guesses in flight for k.
func (in *inflight) count(k inflightKey) int { return in.add(k, 0) }

// secretKind says which secret of a user a guess is for.
type secretKind uint8

const (
	secretPassword secretKind = iota
	secretPIN
)

// state returns the failure counter and the stored hash of the secret of
// kind k of u.
func (k secretKind) state(u *store.User) (failed *int, hash string) {
	if k == secretPIN {
		return &u.FailedPINs, u.PINHash
	}
	return &u.FailedPasswords, u.PasswordHash
}

// lockedAt reports whether the secret of kind k of u is locked at now: the
// PIN's lock and the permanent password lock hold until an admin lifts
// them, a timed password lock until its end.
func (k secretKind) lockedAt(u *store.User, now time.Time) bool {
	if k == secretPIN {
		return u.PINLocked
	}
	return u.PasswordLocked || now.Before(u.PasswordLockedUntil)
}

// lockEnded reports whether u's password has a timed lock that is over at
// now (and not yet cleared).
func lockEnded(u *store.User, now time.Time) bool {
	return !u.PasswordLockedUntil.IsZero() && !now.Before(u.PasswordLockedUntil)
}

// lock locks the secret of kind k of u at now, after MaxFailures failures.
// A signing PIN locks until an admin unlocks it (a smart card's rule: sole
// control). A password locks for a while (NIST SP 800-63B §5.2.2):
// Lockout.Base the first time, twice as long each further time without a
// successful login between, at most Lockout.Max; after
// Lockout.PermanentAfter timed locks in a row (0: never) the next lock is
// permanent.
func (c *Checker) lock(k secretKind, u *store.User, now time.Time) {
	if k == secretPIN {
		u.PINLocked = true
		return
	}
	if p := c.cfg.Lockout.PermanentAfter; p > 0 && u.PasswordLockouts >= p {
		u.PasswordLocked, u.PasswordLockedUntil = true, time.Time{}
		return
	}
	u.PasswordLockouts++
	u.PasswordLockedUntil = now.Add(c.lockDuration(u.PasswordLockouts))
}

// lockDuration is how long the nth timed lock in a row lasts:
// Lockout.Base·2^(n−1), at most Lockout.Max.
func (c *Checker) lockDuration(n int) time.Duration {
	d, limit := c.cfg.Lockout.Base, c.cfg.Lockout.Max
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			d = limit
		} else {
			d *= 2
		}
	}
	return min(d, limit)
}

// reservation is the outcome of reserve.
type reservation int

const (
	// reserved: a failure is counted for the guess; evaluate it.
	reserved reservation = iota
	// refusedLocked: the secret is locked, or every guess left before the
	// lock is in flight. Nothing is evaluated.
	refusedLocked
	// refusedUnusable: no such user, or one who cannot use the secret
	// (disabled, account locked, no hash). Nothing is evaluated.
	refusedUnusable
)

// guess is one reserved evaluation of a secret. Its methods are called
// from the handling goroutine only.
type guess struct {
	c    *Checker
	key  inflightKey
	user *store.User // as read by the reserving transaction
	hash string      // the stored hash to check
	// inFlight is true while the guess counts in c.inflight.
	inFlight bool
	// changed is set by settleStep when the secret was replaced or
	// revoked after the guess was reserved (secretChanged).
	changed bool
	// audit, when set, appends the guess's audit entries in the write
	// transaction that settles it (or returns its reservation, cancel), so
	// that no guess is answered without its entry: u as that transaction
	// read it (as reserved when removed meanwhile) and the outcome.
	audit func(tx Tx, u *store.User, s settlement) error
}

// whyLockedMeanwhile is the reason of a right password settled as wrong
// because the account was locked after it was reserved.
const whyLockedMeanwhile = "account locked meanwhile"

// whySecretChanged is the reason of a guess settled as not accepted, and
// not counted, because the user's password or PIN was replaced or their
// grants revoked (the secret generation moved) after it was reserved.
const whySecretChanged = "password or PIN changed meanwhile"

// secretChanged reports whether u, as a settling transaction reads it, is
// no longer the user a guess of kind k reserved against (was): another
// user of the name, another hash of the secret, or a secret generation
// that moved (store.User.SecretGeneration). counted reports whether u's
// failure counter still holds the guess's reservation: it does unless the
// secret itself was replaced (a new secret's counter is its own; set-pin
// and set-password clear it).
func (k secretKind) secretChanged(was, u *store.User) (changed, counted bool) {
	_, wasHash := k.state(was)
	_, hash := k.state(u)
	switch {
	case was.ID != u.ID || wasHash != hash:
		return true, false
	case was.SecretGeneration != u.SecretGeneration:
		return true, true
	}
	return false, false
}

// settlement is the outcome of a settled guess, for its audit entries.
type settlement struct {
	accepted, locked, lockedNow bool
	// why is the reason of a guess not accepted ("wrong password",
	// "replayed one-time code", ...).
	why string
}

// record calls g.audit, when set.
func (g *guess) record(tx Tx, u *store.User, s settlement) error {
	if g.audit == nil {
		return nil
	}
	return g.audit(tx, u, s)
}

// reserve runs step 1 for a guess of the secret kind of username. The
// returned guess is nil unless the outcome is reserved; the user is the one
// read (nil when unknown). lockedNow reports that this call wrote the lock
// (a counter at MaxFailures with nothing in flight).
func (c *Checker) reserve(ctx context.Context, kind secretKind, username string) (g *guess, res reservation, user *store.User, lockedNow bool, err error) {
	key := inflightKey{kind, username}
	now := c.now()
	err = c.store.Update(ctx, func(tx Tx) error {
		g.release() // in case fn runs again
		g, res, user, lockedNow = nil, refusedUnusable, nil, false
		u, err := tx.User(username)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		user = u
		failed, hash := kind.state(u)
		if kind == secretPassword && lockEnded(u, now) {
			// The timed lock is over: MaxFailures guesses again, less
			// those still in flight (reserved before the lock, they
			// count). Written with this guess's reservation.
			u.PasswordLockedUntil = time.Time{}
			*failed = min(*failed, c.inflight.count(key))
		}
		switch {
		case u.Status != store.UserActive, u.PasswordLocked && kind != secretPassword, hash == "":
			return nil
		case kind.lockedAt(u, now):
			res = refusedLocked
			return nil
		case *failed >= c.cfg.MaxFailures:
			res = refusedLocked
			if c.inflight.count(key) > 0 {
				return nil // the guesses in flight decide
			}
			c.lock(kind, u, now)
			lockedNow = true
			if err := tx.PutUser(u); err != nil {
				return err
			}
			return tx.AppendAudit(c.lockEntry(ctx, kind, u))
		}
		*failed++
		if err := tx.PutUser(u); err != nil {
			return err
		}
		g, res = &guess{c: c, key: key, user: u, hash: hash, inFlight: true}, reserved
		c.inflight.add(key, 1)
		return nil
	})
	if err != nil {
		if g != nil {
			g.release() // not committed: nothing is counted
		}
		return nil, 0, nil, false, err
	}
	return g, res, user, lockedNow, nil
}

// release drops g from the in-flight register without touching the store:
// a reservation that was not settled stays counted as a failure. It is
// safe to call more than once and on nil.
func (g *guess) release() {
	if g == nil || !g.inFlight {
		return
	}
	g.inFlight = false
	g.c.inflight.add(g.key, -1)
}

// settle runs step 3: it records the evaluated outcome of g and reports
// whether the secret is locked afterwards, and whether this call locked it.
// It runs even when the client has gone away, so that a finished
// evaluation is always recorded.
func (g *guess) settle(ctx context.Context, ok bool, why string) (locked, lockedNow bool, err error) {
	_, locked, lockedNow, err = g.settleStep(ctx, ok, 0, why)
	return locked, lockedNow, err
}

// settleStep is settle for a guess that includes a one-time code of RFC
// 6238 time step totpStep (0: none). A right guess whose step is not after
// the user's TOTPLastStep is a replayed code: it is settled as a wrong
// guess. Otherwise the step is recorded in the same write transaction, so
// of concurrent guesses with one code exactly one is accepted. accepted is
// the outcome after that check. why is the audit reason of a guess that is
// not ok (g.audit); settleStep sets its own when it turns a right guess
// down.
//
// A right password that settles while the account is locked (by guesses
// that settled first, or by an admin) is no success: it is settled as a
// wrong guess, and answered like one. A right PIN is settled as right and
// refused by the step's final transaction (recheck), whose answer names
// the PIN lock: the user has logged in.
//
// A guess of a secret that was replaced or revoked after it was reserved
// (secretChanged) is not accepted, right or wrong, and counts nothing.
//
// A success resets the counter and, for a password, forgets the timed
// locks before it (the next lock lasts Lockout.Base again).
func (g *guess) settleStep(ctx context.Context, ok bool, totpStep int64, why string) (accepted, locked, lockedNow bool, err error) {
	limit := g.c.cfg.MaxFailures
	kind := g.key.kind
	now := g.c.now()
	err = g.c.store.Update(context.WithoutCancel(ctx), func(tx Tx) error {
		accepted, locked, lockedNow, g.changed = ok, false, false, false
		reason := ""
		if !ok {
			reason = why
		}
		g.release()
		u, err := tx.User(g.key.username)
		if errors.Is(err, store.ErrNotFound) {
			// Deleted meanwhile: the entry names the user as reserved.
			return g.record(tx, g.user, settlement{why: "user removed meanwhile"})
		}
		if err != nil {
			return err
		}
		// put writes u back with the guess's audit entries.
		put := func() error {
			if err := tx.PutUser(u); err != nil {
				return err
			}
			return g.record(tx, u, settlement{accepted, locked, lockedNow, reason})
		}
		failed, _ := kind.state(u)
		if changed, counted := kind.secretChanged(g.user, u); changed {
			// Checked against a secret that is no longer the stored one:
			// neither a success nor a failure of the secret stored now.
			// The reservation is given back where it still counts.
			accepted, reason, g.changed = false, whySecretChanged, true
			if !counted || *failed == 0 {
				return g.record(tx, u, settlement{why: reason})
			}
			*failed--
			return put()
		}
		if accepted && kind == secretPassword && kind.lockedAt(u, now) {
			accepted, reason = false, whyLockedMeanwhile
		}
		if accepted && totpStep != 0 {
			if u.TOTPLastStep >= totpStep {
				accepted, reason = false, "replayed one-time code" // a wrong code
			} else {
				u.TOTPLastStep = totpStep
			}
		}
		if accepted {
			// Release this reservation; those still in flight keep theirs
			// (never more than the counter holds: an admin may have reset it).
			n := min(g.c.inflight.count(g.key), max(*failed-1, 0))
			forget := kind == secretPassword && (u.PasswordLockouts != 0 || !u.PasswordLockedUntil.IsZero())
			if n == *failed && totpStep == 0 && !forget {
				return g.record(tx, u, settlement{accepted: true})
			}
			*failed = n
			if forget {
				u.PasswordLockouts, u.PasswordLockedUntil = 0, time.Time{}
			}
			return put()
		}
		// A wrong guess writes the user back even when nothing changed:
		// cancel (a pageless refusal of a TOTP user's right password)
		// writes too, and on etcd a transaction that only reads costs no
		// commit, so the two would differ in time.
		if kind.lockedAt(u, now) {
			locked = true
			return put()
		}
		if *failed < limit {
			return put()
		}
		g.c.lock(kind, u, now)
		locked, lockedNow = true, true
		return put()
	})
	return accepted, locked, lockedNow, err
}

// cancel returns the reservation of a guess that was not evaluated (no
// hashing slot in time, or the client went away).
func (g *guess) cancel(ctx context.Context) error {
	return g.cancelAudited(ctx, "")
}

// cancelAudited is cancel for a guess that was evaluated and is answered
// as failed without counting (a pageless login of a TOTP user): when why
// is not "", the guess's audit entries are appended in the same
// transaction (g.audit), with why as the reason.
func (g *guess) cancelAudited(ctx context.Context, why string) error {
	return g.c.store.Update(context.WithoutCancel(ctx), func(tx Tx) error {
		g.release()
		u, err := tx.User(g.key.username)
		if errors.Is(err, store.ErrNotFound) {
			u = nil
		} else if err != nil {
			return err
		}
		if why != "" {
			if err := g.record(tx, cmp.Or(u, g.user), settlement{why: why}); err != nil {
				return err
			}
		}
		if u == nil {
			return nil
		}
		failed, _ := g.key.kind.state(u)
		if *failed == 0 {
			return nil
		}
		*failed--
		return tx.PutUser(u)
	})
}

// evaluate runs step 2 for g in a hashing slot. When no slot frees up in
// time (ErrBusy) or ctx ends, the reservation is returned and the error is
// passed on.
func (g *guess) evaluate(ctx context.Context, secret []byte) (bool, error) {
	var ok bool
	var herr error
	if err := g.c.limiter.do(ctx, func() { ok, herr = g.c.hasher.Check(g.hash, secret) }); err != nil {
		if cerr := g.cancel(ctx); cerr != nil {
			g.c.log.ErrorContext(ctx, "returning a reservation", "username", g.key.username, "err", cerr)
		}
		return false, err
	}
	// A malformed stored hash is an error; the reservation stays counted.
	return ok, herr
}

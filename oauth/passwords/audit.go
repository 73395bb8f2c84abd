package passwords

import (
	"context"
	"net/netip"
	"strconv"
	"time"

	"github.com/signd/signd/store"
)

// Security events in the audit log (store.AuditLogin, AuditLoginLock,
// AuditPINLock). Every login attempt that gets an answer — ok, failed or
// refused — appends one login entry, in the write transaction that
// settles its guess (or, for a guess that is not evaluated, in the write
// transaction that stands in for the settling one), so that no answer is
// given without its entry and the entry costs the same work whether the
// username is known or not. A guess that locks the password appends a
// user_locked entry beside its login entry; one that locks the signing
// PIN a pin_locked entry (the PIN's attempts themselves are audited by
// their door: the authorize entries of credentials/authorize and the
// consent page's log).
//
// An entry holds the account (User, "" for a username that names no
// account: that text is the attacker's, often a password typed into the
// wrong field, and is not recorded), the client, the remote address, the
// method and door in Fields, the outcome and a fixed Reason; never the
// password, PIN, code or username typed.

// Login methods (Fields["method"]).
const (
	methodPassword  = "password"   // a password alone
	methodTOTP      = "totp"       // a password and a one-time code (the account has TOTP)
	methodAuthLogin = "auth_login" // CSC auth/login: a password without a one-time code
)

// loginEntry is the audit entry of a login attempt (u as the
// settling transaction read it, nil when unknown) from the Origin of ctx.
func (c *Checker) loginEntry(ctx context.Context, u *store.User, pageless bool, outcome, reason string) *store.AuditEntry {
	o := OriginFrom(ctx)
	e := &store.AuditEntry{Time: c.now(), Kind: store.AuditLogin, Client: o.Client, IP: o.IP,
		Outcome: outcome, Reason: reason, Fields: map[string]string{"method": loginMethod(u, pageless)}}
	if o.Door != "" {
		e.Fields["door"] = o.Door
	}
	if u != nil {
		e.User, e.Target = u.Username, "user:"+u.Username
	}
	return e
}

// loginMethod names how u logs in, for the audit entry and the metrics
// alike: auth_login (CSC, no page), totp (the account has a one-time code)
// or password.
func loginMethod(u *store.User, pageless bool) string {
	switch {
	case pageless:
		return methodAuthLogin
	case u != nil && u.TOTPSecret != "":
		return methodTOTP
	}
	return methodPassword
}

// lockEntry is the audit entry of the lock of the secret kind of u, just
// set at the Checker's now: user_locked for the password (Fields["until"]
// the end of a timed lock in RFC 3339, or "permanent" for one an admin
// lifts), pin_locked for the signing PIN (always "permanent").
func (c *Checker) lockEntry(ctx context.Context, kind secretKind, u *store.User) *store.AuditEntry {
	o := OriginFrom(ctx)
	e := &store.AuditEntry{Time: c.now(), Kind: store.AuditLoginLock, User: u.Username, Target: "user:" + u.Username,
		Client: o.Client, IP: o.IP, Outcome: store.AuditOK,
		Fields: map[string]string{"failures": strconv.Itoa(c.cfg.MaxFailures), "until": "permanent"}}
	if kind == secretPIN {
		e.Kind = store.AuditPINLock
	} else if !u.PasswordLocked {
		e.Fields["until"] = u.PasswordLockedUntil.UTC().Format(time.RFC3339)
	}
	if o.Door != "" {
		e.Fields["door"] = o.Door
	}
	return e
}

// AuditIP is the remote address as an audit entry records it (WithOrigin
// applies it): the address in its canonical form without a zone, or
// "invalid" for anything else (the daemon's real-IP policy only yields
// addresses; a bare echo server's RealIP may return a header's text, which
// is not copied into the log).
func AuditIP(s string) string {
	if s == "" {
		return ""
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").String() // a zone is free text
	}
	return "invalid"
}

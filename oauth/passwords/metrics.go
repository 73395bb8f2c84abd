package passwords

import "github.com/signd/signd/store"

// Metrics receives the outcome of every login and every lock, where the
// Checker decides it; the daemon's Prometheus registry is one. Nil
// (Config.Metrics unset) records nothing.
type Metrics interface {
	// ObserveLogin is called once per login attempt that got an answer
	// (not for ErrBusy or a store failure): method "password" (the login
	// or account page, an account without TOTP, or an unknown username),
	// "totp" (those pages, an account with TOTP: password and one-time
	// code) or "auth_login" (CSC auth/login); result "ok", "failed" (a
	// wrong password or code, an unknown user, an account without a
	// password, a TOTP account on auth/login), "locked" (the account was
	// or became locked) or "disabled".
	ObserveLogin(method, result string)
	// ObserveLockout is called when a guess locks a secret: "password"
	// (a timed or permanent account lock) or "pin" (the signing PIN).
	ObserveLockout(secret string)
}

// Login results of Metrics.ObserveLogin.
const (
	LoginOK       = "ok"
	LoginFailed   = "failed"
	LoginLocked   = "locked"
	LoginDisabled = "disabled"
)

// LoginMethods and LoginResults are the label values of
// Metrics.ObserveLogin, for a registry that publishes every series from the
// start.
var (
	LoginMethods = []string{"password", "totp", "auth_login"}
	LoginResults = []string{LoginOK, LoginFailed, LoginLocked, LoginDisabled}
)

// observeLogin records a login of user (as reserved; nil when unknown).
func (c *Checker) observeLogin(user *store.User, pageless bool, result string) {
	if c.cfg.Metrics == nil {
		return
	}
	c.cfg.Metrics.ObserveLogin(loginMethod(user, pageless), result)
}

// refusedResult is the login result of a guess reserve refused without
// evaluating it.
func refusedResult(res reservation, user *store.User) string {
	switch {
	case res == refusedLocked:
		return LoginLocked
	case user != nil && user.Status != store.UserActive:
		return LoginDisabled
	case user != nil && user.PasswordLocked:
		return LoginLocked
	}
	return LoginFailed
}

// observeLockout records that a guess locked the secret of kind k.
func (c *Checker) observeLockout(k secretKind) {
	if c.cfg.Metrics == nil {
		return
	}
	secret := "password"
	if k == secretPIN {
		secret = "pin"
	}
	c.cfg.Metrics.ObserveLockout(secret)
}

// Package passwords checks the secrets a user proves themselves with —
// the login password, the signing PIN and the TOTP code (RFC 6238) — with
// one lockout for every door they come through: the authorization
// server's login page, account page and consent page (oauth), and the CSC
// API's auth/login and credentials/authorize (csc). A Checker is the one
// place that reserves a guess, hashes it in a bounded number of argon2id
// slots, settles it and locks the secret (guess.go), so a guess costs the
// same however it arrives and no more than Config.MaxFailures wrong ones
// are ever evaluated between two successes.
//
// passwords owns the counters and locks on store.User (FailedPasswords,
// PasswordLockedUntil, FailedPINs, PINLocked, TOTPLastStep) and the audit
// entries of what it decides — each login attempt, each lock — appended in
// the transaction that writes them (audit.go), with where the request came
// from (Origin, which the door puts in its context); nothing else: the
// caller renders the answer, opens the session or issues the
// code, and re-checks the locks in the write transaction that ends its
// step (see guess.go, step 4). It imports no HTTP package and nothing of
// signd above store.
package passwords

// Package ratelimit throttles requests per key (an authenticated client's
// ID, a remote address) with token buckets (golang.org/x/time/rate): each
// key's bucket holds Burst requests and refills at Rate a second. A request
// that finds its bucket empty is refused with a *Refused error that says
// when a token is back; each route's error dialect turns it into a 429 with
// Retry-After (oauth's Renderer, csc's protocolError).
//
// Time comes from the injected clock (rate.Limiter's AllowN with an
// explicit time), so tests advance a clock instead of sleeping.
//
// The buckets live in memory, per daemon, in a map bounded by MaxKeys
// (hashicorp/golang-lru: the least recently used key is dropped first), so
// a flood of distinct keys (a client with many addresses) cannot grow it.
// A dropped key starts again with a full bucket, as a new address would.
// RemoteKey folds an IPv6 address into its /64, which one host usually
// holds whole.
//
// It knows nothing of OAuth, CSC or HTTP routes: the callers choose the
// key and the dialect of the refusal.
package ratelimit

package config

import (
	"fmt"
	"math"

	"github.com/signd/signd/config/rules"
)

// RateLimitConfig is the ratelimit.* section: token buckets (a rate a
// second and a burst) per authenticated client or per remote address, in
// memory, per daemon. A rate of 0 turns a limit off.
type RateLimitConfig struct {
	// Timestamp: signatures/timestamp, per client (the bearer's client_id).
	Timestamp LimitConfig `mapstructure:"timestamp"`
	// AuthLogin: auth/login, per remote address (the method has no client
	// authentication; its tokens all go to csc.auth_login_client).
	AuthLogin LimitConfig `mapstructure:"auth_login"`
	// Token: POST /oauth2/token, per authenticated client.
	Token LimitConfig `mapstructure:"token"`
	// Forms: the login form and the account page's login and change forms,
	// per remote address, one bucket for all of them.
	Forms LimitConfig `mapstructure:"forms"`
	// MaxKeys bounds the clients or addresses each limit keeps a bucket for.
	MaxKeys int `mapstructure:"max_keys"`
}

// LimitConfig is one limit: Rate requests a second refill a bucket of
// Burst. Rate 0 = no limit.
type LimitConfig struct {
	Rate  float64 `mapstructure:"rate"`
	Burst int     `mapstructure:"burst"`
}

// Bounds of the ratelimit.* keys.
const (
	// MinRate is the smallest rate other than 0 (one request every 1000 s):
	// below it Retry-After would run into hours.
	MinRate = 0.001
	// MaxRate and MaxBurst are far above what one daemon serves.
	MaxRate  = 1e6
	MaxBurst = 1000000
	// MaxRateLimitKeys caps ratelimit.max_keys: about 200 bytes a key, so
	// at most some 200 MB a limit.
	MaxRateLimitKeys = 1000000
)

// The limits' names, as in the keys, the metric and the docs.
var rateLimitNames = []string{"timestamp", "auth_login", "token", "forms"}

func rateLimitKeys() []Key {
	type def struct {
		rate  float64
		burst int
		what  string
		// doc and burstDoc are the descriptions in docs/CONFIG.md; the
		// rows after the first say "the same" of the first.
		doc, burstDoc string
	}
	defs := map[string]def{
		"timestamp": {10, 50, "signatures/timestamp per client",
			"requests a second that refill each client's bucket for `signatures/timestamp` (the bearer's `client_id`); `0` = no limit; fractions allowed (`0.5` = one every 2 s)",
			"bucket size: time-stamps one client may ask at once after a quiet spell"},
		"auth_login": {1, 50, "auth/login per remote address",
			"the same for `auth/login`, per remote address", ""},
		"token": {100, 200, "POST /oauth2/token per client",
			"the same for `POST /oauth2/token`, per authenticated client", ""},
		"forms": {1, 50, "login and account form posts per remote address",
			"the same for the login form and the account page's login and change forms, per remote address (one bucket for all of them)", ""},
	}
	var keys []Key
	for _, name := range rateLimitNames {
		d := defs[name]
		burstDoc := ""
		if d.burstDoc != "" {
			burstDoc = fmt.Sprintf("%s (1–%d)", d.burstDoc, MaxBurst)
		}
		keys = append(keys,
			Key{Name: "ratelimit." + name + ".rate", Default: d.rate,
				Usage: fmt.Sprintf("requests a second that refill the bucket of %s (0 = no limit, else %g to %g)", d.what, MinRate, MaxRate),
				Doc:   fmt.Sprintf("%s (0, %g–%g)", d.doc, MinRate, MaxRate)},
			Key{Name: "ratelimit." + name + ".burst", Default: d.burst,
				Usage: fmt.Sprintf("bucket size of %s: requests at once after a quiet spell (1 to %d)", d.what, MaxBurst),
				Doc:   burstDoc})
	}
	return append(keys, Key{Name: "ratelimit.max_keys", Default: 10000,
		Usage: fmt.Sprintf("most clients or addresses each limit keeps a bucket for; the least recently seen goes first (1 to %d)", MaxRateLimitKeys),
		Doc:   fmt.Sprintf("most clients or addresses each limit keeps a bucket for (about 200 bytes each); past it the least recently seen is forgotten and starts again with a full bucket (1–%d)", MaxRateLimitKeys)})
}

// Limits returns the limits by name (timestamp, auth_login, token, forms).
func (r RateLimitConfig) Limits() map[string]LimitConfig {
	return map[string]LimitConfig{"timestamp": r.Timestamp, "auth_login": r.AuthLogin, "token": r.Token, "forms": r.Forms}
}

func (r *RateLimitConfig) checks() []check {
	limits := r.Limits()
	var checks []check
	for _, name := range rateLimitNames {
		l := limits[name]
		checks = append(checks,
			check{"ratelimit." + name + ".rate", rateProblem(l.Rate)},
			check{"ratelimit." + name + ".burst", rules.Between(l.Burst, 1, MaxBurst)})
	}
	return append(checks, check{"ratelimit.max_keys", rules.Between(r.MaxKeys, 1, MaxRateLimitKeys)})
}

// rateProblem checks a rate: 0 (no limit) or MinRate to MaxRate.
func rateProblem(rate float64) string {
	switch {
	case rate == 0:
		return ""
	case math.IsNaN(rate) || rate < MinRate || rate > MaxRate:
		return fmt.Sprintf("%v is not 0 (no limit) or between %g and %g requests a second", rate, MinRate, MaxRate)
	}
	return ""
}

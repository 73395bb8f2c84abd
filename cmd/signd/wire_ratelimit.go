package main

import (
	"github.com/signd/signd/config"
	"github.com/signd/signd/oauth/ratelimit"
)

// rateLimits are the limits of ratelimit.*, nil where the rate is 0.
type rateLimits struct {
	timestamp, authLogin, token, forms *ratelimit.Limiter
}

// newRateLimits builds the limits of ratelimit.* on the daemon's clock,
// counted in signd_ratelimit_refused_total.
func (s *services) newRateLimits() (rateLimits, error) {
	var m ratelimit.Metrics
	if s.metrics != nil {
		m = s.metrics
	}
	rl := s.cfg.RateLimit
	var out rateLimits
	for _, l := range []struct {
		name string
		cfg  config.LimitConfig
		to   **ratelimit.Limiter
	}{
		{"timestamp", rl.Timestamp, &out.timestamp},
		{"auth_login", rl.AuthLogin, &out.authLogin},
		{"token", rl.Token, &out.token},
		{"forms", rl.Forms, &out.forms},
	} {
		lim, err := ratelimit.New(ratelimit.Config{Name: l.name, Rate: l.cfg.Rate, Burst: l.cfg.Burst,
			MaxKeys: rl.MaxKeys, Now: s.now, Metrics: m})
		if err != nil {
			return rateLimits{}, err
		}
		*l.to = lim
	}
	return out, nil
}

package crlscope_test

import (
	"testing"
	"time"

	"github.com/signd/signd/internal/crlscope"
)

// TestFuture: a thisUpdate up to Skew (5 minutes) ahead of the clock is
// taken, one further ahead is from a wrong clock.
func TestFuture(t *testing.T) {
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		ahead time.Duration
		want  bool
	}{
		{-time.Hour, false},
		{0, false},
		{5 * time.Minute, false},
		{5*time.Minute + time.Second, true},
		{time.Hour, true},
	} {
		if got := crlscope.Future(now.Add(tt.ahead), now); got != tt.want {
			t.Errorf("Future(now%+v) = %v, want %v", tt.ahead, got, tt.want)
		}
	}
}

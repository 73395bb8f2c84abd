package hsm

import (
	"errors"
	"fmt"
	"testing"
)

// TestMarkNotSigned: a signer other than Token marks its failures so that
// NotSigned vouches for them; the mark keeps the error's text and chain.
func TestMarkNotSigned(t *testing.T) {
	cause := fmt.Errorf("software token: %w", ErrTokenUnavailable)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"marked", MarkNotSigned(cause), true},
		{"marked, wrapped again", fmt.Errorf("sign: %w", MarkNotSigned(cause)), true},
		{"unmarked", cause, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NotSigned(tt.err); got != tt.want {
				t.Errorf("NotSigned(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if MarkNotSigned(nil) != nil {
		t.Error("MarkNotSigned(nil) is not nil")
	}
	if m := MarkNotSigned(cause); m.Error() != cause.Error() || !errors.Is(m, ErrTokenUnavailable) {
		t.Errorf("marked error %q does not keep %q and its chain", m, cause)
	}
}

package hsm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/signd/signd/hsm"
)

// TestErrorsAnswerTheirMeaning: every sentinel, wrapped as the package
// returns it, answers through errors.As what it means for a caller
// (package csc asks exactly these interfaces and does not import hsm);
// only a NotSigned-marked error answers NotSigned.
func TestErrorsAnswerTheirMeaning(t *testing.T) {
	type answers struct{ unavailable, keyUnusable, keyMissing, unsupported, notSigned bool }
	tests := []struct {
		err  error
		want answers
	}{
		{hsm.ErrBusy, answers{unavailable: true}},
		{hsm.ErrTokenUnavailable, answers{unavailable: true}},
		{hsm.ErrPIN, answers{unavailable: true}},
		{hsm.ErrClosed, answers{unavailable: true}},
		{hsm.ErrKeyNotFound, answers{keyUnusable: true, keyMissing: true}},
		{hsm.ErrAmbiguousKey, answers{keyUnusable: true}},
		{hsm.ErrKeyPolicy, answers{keyUnusable: true}},
		{hsm.ErrKeyNotFrozen, answers{keyUnusable: true}},
		{hsm.ErrWeakKey, answers{keyUnusable: true}},
		{hsm.ErrUnsupportedAlgorithm, answers{unsupported: true}},
		{hsm.ErrBadDigest, answers{}},
		{hsm.ErrModule, answers{}},
		{hsm.ErrTokenNotFound, answers{}},
		{hsm.ErrLabelExists, answers{}},
		{hsm.ErrCertKeyMismatch, answers{}},
		{errors.New("other"), answers{}},
		{hsm.MarkNotSigned(fmt.Errorf("hsm: sign: %w", hsm.ErrBusy)), answers{unavailable: true, notSigned: true}},
		{hsm.MarkNotSigned(fmt.Errorf("hsm: sign: %w", hsm.ErrKeyNotFound)), answers{keyUnusable: true, keyMissing: true, notSigned: true}},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			err := fmt.Errorf("caller: %w", tt.err)
			var (
				u  interface{ Unavailable() bool }
				ku interface{ KeyUnusable() bool }
				km interface{ KeyMissing() bool }
				us interface{ Unsupported() bool }
				ns interface{ NotSigned() bool }
			)
			got := answers{
				unavailable: errors.As(err, &u) && u.Unavailable(),
				keyUnusable: errors.As(err, &ku) && ku.KeyUnusable(),
				keyMissing:  errors.As(err, &km) && km.KeyMissing(),
				unsupported: errors.As(err, &us) && us.Unsupported(),
				notSigned:   errors.As(err, &ns) && ns.NotSigned(),
			}
			if got != tt.want {
				t.Errorf("answers %+v, want %+v", got, tt.want)
			}
			if got.notSigned != hsm.NotSigned(err) {
				t.Errorf("NotSigned() %v, hsm.NotSigned %v", got.notSigned, hsm.NotSigned(err))
			}
		})
	}
}

package users

import (
	"context"
	"strings"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/store"
)

const maxIssuerLen = 64

// EnrollTOTP performs Service.EnrollTOTP: it generates a secret (SHA-1, 6 digits,
// 30 s: what authenticator apps support), stores it and revokes what was
// issued without the second factor. A user who has TOTP already is a
// conflict (remove it first).
func (l *Users) EnrollTOTP(ctx context.Context, by principal.Principal, req ops.EnrollTOTPRequest) (_ *ops.TOTPEnrollment, err error) {
	a, err := l.Begin(ctx, by, "EnrollTOTP", store.AuditUserTOTPEnrolled, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	issuer := req.Issuer
	if issuer == "" {
		issuer = "signd"
	}
	a.Set("totp", "enrolled")
	a.Set("issuer", issuer)
	if len(issuer) > maxIssuerLen || strings.ContainsFunc(issuer, func(r rune) bool { return r < ' ' || r == ':' || r == 0x7f }) {
		return nil, act.Errorf(ops.KindInvalid, "issuer must be at most %d bytes without ':' or control characters", maxIssuerLen)
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: issuer, AccountName: req.Username, Period: 30, SecretSize: 20,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return nil, l.Fail("enroll TOTP", err)
	}
	v, err := l.updateUser(ctx, a, req.Username, store.Tx.RevokeUser, func(u *store.User) error {
		if u.TOTPSecret != "" {
			return act.Errorf(ops.KindConflict, "user %q has TOTP already: remove it first with `signd user totp remove %s`", u.Username, u.Username)
		}
		u.TOTPSecret, u.TOTPLastStep = key.Secret(), 0
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &ops.TOTPEnrollment{
		Username: v.Username, Secret: key.Secret(), URI: key.URL(),
		Period: 30, Digits: 6, Algorithm: "SHA1", Revoked: v.Revoked,
	}, nil
}

// RemoveTOTP performs Service.RemoveTOTP: the user logs in with the password alone
// again. Removing it from a user without TOTP is a conflict.
func (l *Users) RemoveTOTP(ctx context.Context, by principal.Principal, username string) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "RemoveTOTP", store.AuditUserTOTPRemoved, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "RemoveTOTP", ops.NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Set("totp", "removed")
	return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
		if u.TOTPSecret == "" {
			return act.Errorf(ops.KindConflict, "user %q has no TOTP", u.Username)
		}
		u.TOTPSecret, u.TOTPLastStep = "", 0
		return nil
	})
}

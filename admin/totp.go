package admin

import (
	"context"
	"strings"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/store"
)

const maxIssuerLen = 64

// EnrollTOTP implements Service: it generates a secret (SHA-1, 6 digits,
// 30 s: what authenticator apps support), stores it and revokes what was
// issued without the second factor. A user who has TOTP already is a
// conflict (remove it first).
func (l *Local) EnrollTOTP(ctx context.Context, by Principal, req EnrollTOTPRequest) (_ *TOTPEnrollment, err error) {
	a, err := l.begin(ctx, by, "EnrollTOTP", store.AuditUserTOTPEnrolled, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	issuer := req.Issuer
	if issuer == "" {
		issuer = "signd"
	}
	a.set("totp", "enrolled")
	a.set("issuer", issuer)
	if len(issuer) > maxIssuerLen || strings.ContainsFunc(issuer, func(r rune) bool { return r < ' ' || r == ':' || r == 0x7f }) {
		return nil, errorf(KindInvalid, "issuer must be at most %d bytes without ':' or control characters", maxIssuerLen)
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: issuer, AccountName: req.Username, Period: 30, SecretSize: 20,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return nil, l.fail("enroll TOTP", err)
	}
	v, err := l.updateUser(ctx, a, req.Username, store.Tx.RevokeUser, func(u *store.User) error {
		if u.TOTPSecret != "" {
			return errorf(KindConflict, "user %q has TOTP already: remove it first with `signd user totp remove %s`", u.Username, u.Username)
		}
		u.TOTPSecret, u.TOTPLastStep = key.Secret(), 0
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &TOTPEnrollment{
		Username: v.Username, Secret: key.Secret(), URI: key.URL(),
		Period: 30, Digits: 6, Algorithm: "SHA1", Revoked: v.Revoked,
	}, nil
}

// RemoveTOTP implements Service: the user logs in with the password alone
// again. Removing it from a user without TOTP is a conflict.
func (l *Local) RemoveTOTP(ctx context.Context, by Principal, username string) (_ *UserView, err error) {
	a, err := l.begin(ctx, by, "RemoveTOTP", store.AuditUserTOTPRemoved, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "RemoveTOTP", NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.set("totp", "removed")
	return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
		if u.TOTPSecret == "" {
			return errorf(KindConflict, "user %q has no TOTP", u.Username)
		}
		u.TOTPSecret, u.TOTPLastStep = "", 0
		return nil
	})
}

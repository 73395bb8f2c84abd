package config

import (
	"fmt"
	"time"
)

// EnrollmentConfig is admin.enrollment_ttl, part of the admin.* section
// (AdminConfig): how long the one-time enrollment link of a user created
// with enroll (the provisioning API's POST /users, `signd user add
// --enroll`) stays open.
type EnrollmentConfig struct {
	EnrollmentTTL time.Duration `mapstructure:"enrollment_ttl"`
}

// Bounds of admin.enrollment_ttl: long enough for a letter or a mail to
// arrive, short enough that a forgotten link does not wait for weeks.
const (
	MinEnrollmentTTL = 5 * time.Minute
	MaxEnrollmentTTL = 7 * 24 * time.Hour
)

func enrollmentKeys() []Key {
	return []Key{
		{Name: "admin.enrollment_ttl", Default: 24 * time.Hour,
			Usage: fmt.Sprintf("how long a one-time enrollment link stays open (%v to %v)", MinEnrollmentTTL, MaxEnrollmentTTL),
			Doc:   "how long the one-time enrollment link of a user created with `enroll` (provisioning API `POST /users`) stays open; the user sets password and signing PIN on it once (5m–168h)"},
	}
}

func (e *EnrollmentConfig) checks() []check {
	return []check{{"admin.enrollment_ttl", within(e.EnrollmentTTL, MinEnrollmentTTL, MaxEnrollmentTTL)}}
}

//go:build tools

// Package tools pins the modules the protocol services use, so go.mod holds
// them while those services are written in parallel. Removed once each is
// imported for real.
package tools

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/coreos/go-oidc/v3/oidc"
	_ "github.com/getkin/kin-openapi/openapi3"
	_ "github.com/go-jose/go-jose/v4"
	_ "github.com/pquerna/otp/totp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "golang.org/x/oauth2"
	_ "golang.org/x/text/language"
)

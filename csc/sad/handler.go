package sad

import (
	"errors"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
)

// Metrics receives the measurements of explicit authorization; cmd adapts
// it to Prometheus. Its method must be safe for concurrent use and must
// not block.
type Metrics interface {
	// ObserveAuthorize is called once per credentials/authorize (method
	// "authorize") and credentials/extendTransaction ("extendTransaction")
	// request that reached the handler, with its result: "granted" (a SAD
	// issued), "wrong_pin" (the PIN or OTP was wrong), "locked" (the PIN
	// is locked), "refused" (any other client error) or "error" (the
	// server could not answer: store or HSM unavailable, internal error).
	ObserveAuthorize(method, result string)
}

// Handler serves credentials/authorize, credentials/extendTransaction and
// credentials/sendOTP. Fill the fields and call Mount; package csc does,
// from its own Handler.
type Handler struct {
	Store protocol.Store  // required
	Certs *protocol.Certs // required: the certificate checks, shared with the other methods
	// PIN checks signing PINs with the consent page's lockout
	// (*passwords.Checker). nil: credentials/authorize is not offered
	// (Mount does not register it).
	PIN PINChecker
	// MaxHashes caps the hash array of one request. Required (> 0).
	MaxHashes int
	// SADTTL is the lifetime of a SAD that credentials/authorize or
	// credentials/extendTransaction issues (oauth.sad_ttl); 0 means
	// DefaultSADTTL.
	SADTTL  time.Duration
	Now     func() time.Time // required
	Logger  *slog.Logger     // required
	Metrics Metrics          // nil = none
}

// Mount registers the methods on r behind bearer, the service token check.
// It fails when a required field is missing.
func (h *Handler) Mount(r *protocol.Routes, bearer echo.MiddlewareFunc) error {
	switch {
	case h.Store == nil, h.Certs == nil, h.Now == nil, h.Logger == nil:
		return errors.New("sad: Store, Certs, Now and Logger are required")
	case h.MaxHashes <= 0:
		return errors.New("sad: MaxHashes must be positive")
	}
	if h.PIN != nil {
		r.Method("credentials/authorize", h.authorize, bearer)
	}
	r.Method("credentials/extendTransaction", h.extendTransaction, bearer)
	r.Method("credentials/sendOTP", h.sendOTP, bearer)
	return nil
}

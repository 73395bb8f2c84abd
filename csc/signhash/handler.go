package signhash

import (
	"context"
	"crypto"
	"errors"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
)

// Signer makes signatures with the key whose HSM ID is keyID. *hsm.Token
// satisfies it.
type Signer interface {
	// SignDigests signs each of digests, hashes of opts.HashFunc(), in
	// turn on one HSM session and returns the signatures in the same
	// order: RSA PKCS#1 v1.5 over a DigestInfo (opts a crypto.Hash) or
	// RSASSA-PSS with a salt of the hash's length (opts *rsa.PSSOptions)
	// with an RSA key, ECDSA returned as a DER ECDSA-Sig-Value with an EC
	// key. Every signature is verified against the public key before it
	// is returned. On failure it returns no signature; the error answers
	// its meaning through methods (restore.go): it proves that none was
	// made (NotSigned) only when the HSM made none of the batch.
	SignDigests(ctx context.Context, keyID []byte, opts crypto.SignerOpts, digests [][]byte) ([][]byte, error)
	// CheckKey reports, cheaply and without signing, whether keyID could
	// sign now. signHash asks it before it consumes a SAD.
	CheckKey(ctx context.Context, keyID []byte) error
}

// SchemeChecker is a Signer that can also tell, before anything is
// spent, whether it can sign in a given scheme (*hsm.Token.CheckSign: the
// mechanism, the PSS salt the token takes). signHash's preflight asks it
// instead of CheckKey when the Signer has it.
type SchemeChecker interface {
	CheckSign(ctx context.Context, keyID []byte, opts crypto.SignerOpts) error
}

// Metrics receives the measurements of signHash; cmd adapts it to
// Prometheus. Methods must be safe for concurrent use and must not block.
type Metrics interface {
	// ObserveSignHash is called once per signHash request that reached the
	// handler, with its duration and outcome: "signed", "refused" (a client
	// error, SAD refusals included), "unavailable" or "error".
	ObserveSignHash(d time.Duration, outcome string)
	// ObserveSAD is called when a signHash decided about a SAD: outcome
	// "consumed" (granted) or "refused", with a short fixed reason
	// ("unknown", "user", "client", "credential", "expired", "hash",
	// "revoked": the SAD's client or user was removed or disabled), and
	// "restored" (reason "") when signing failed before any signature was
	// made and the SAD was given back.
	ObserveSAD(outcome, reason string)
}

// Handler serves signatures/signHash. Fill the fields and call Mount;
// package csc does, from its own Handler.
type Handler struct {
	Store  protocol.Store  // required
	Signer Signer          // required
	Certs  *protocol.Certs // required: the certificate checks, shared with the other methods
	// Clustered says that this node is one of several sharing the store:
	// a Signer error that answers KeyMissing is then 503 with the SAD not
	// consumed (or given back); false: such a key is unusable (400).
	Clustered bool
	// MaxHashes caps the hash array of one request; the parser stops
	// reading the array one entry past it. Required (> 0).
	MaxHashes int
	Now       func() time.Time // required
	Logger    *slog.Logger     // required
	Metrics   Metrics          // nil = none
}

// Mount registers signatures/signHash on r behind bearer, the service
// token check (with a trace task while an execution trace is taken). It
// fails when a required field is missing.
func (h *Handler) Mount(r *protocol.Routes, bearer echo.MiddlewareFunc) error {
	switch {
	case h.Store == nil, h.Signer == nil, h.Certs == nil, h.Now == nil, h.Logger == nil:
		return errors.New("signhash: Store, Signer, Certs, Now and Logger are required")
	case h.MaxHashes <= 0:
		return errors.New("signhash: MaxHashes must be positive")
	}
	r.Method("signatures/signHash", h.signHash, traceTask("signHash", bearer))
	return nil
}

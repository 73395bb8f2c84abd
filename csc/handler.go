package csc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/csc/sad"
	"github.com/signd/signd/csc/signhash"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store"
)

// Tx is what the CSC API uses of a store transaction (protocol.Tx).
type Tx = protocol.Tx

// Store is the CSC API's view of the store (protocol.Store; store.Scope
// makes one).
type Store = protocol.Store

var _ CredentialStore = (*store.Scoped[store.CredentialReader])(nil)

// Signer makes signatures with the key whose HSM ID is keyID
// (signhash.Signer). *hsm.Token satisfies it.
type Signer = signhash.Signer

// PSSReporter is a Signer that says whether its token signs RSASSA-PSS
// (*hsm.Token.SignsPSS). credentials/info lists no RSASSA-PSS for a
// Signer that reports false.
type PSSReporter interface {
	SignsPSS() bool
}

// Revocation is the cached revocation status of certificate chains
// (protocol.Revocation; *certstatus.Checker satisfies it).
type Revocation = protocol.Revocation

// Metrics receives measurements of signHash (signhash.Metrics) and of
// explicit authorization (sad.Metrics); cmd adapts it to Prometheus.
// Methods must be safe for concurrent use and must not block.
type Metrics interface {
	signhash.Metrics
	sad.Metrics
}

// InfoConfig is what /csc/v1/info reports besides the fixed fields.
type InfoConfig struct {
	Name        string
	Logo        string
	Region      string // ISO 3166-1 alpha-2
	Lang        string // RFC 5646
	Description string
}

// Handler serves /csc/v1. Fill the exported fields and call Mount.
type Handler struct {
	Store  Store  // required
	Signer Signer // required
	// Clustered says that this node is one of several sharing the store
	// (an etcd cluster): a Signer error that answers KeyMissing (this
	// node's HSM does not hold the credential's key, another node's may)
	// is then 503 temporarily_unavailable "The signing key is not
	// available on this node, try again later" with Retry-After, the SAD
	// not consumed (or given back), so that the client's retry reaches
	// another node. false: such a key is unusable (400).
	Clustered bool
	// BaseURL is the public base URL (server.base_url): info's oauth2 (the
	// authorization server is at BaseURL/oauth2/...) and the bearer realm.
	BaseURL string // required
	Info    InfoConfig
	// MaxResultsDefault and MaxResultsLimit bound credentials/list pages
	// (csc.max_results_default, csc.max_results_limit).
	MaxResultsDefault int
	MaxResultsLimit   int
	// MaxHashes caps the hash array of one signHash request
	// (csc.max_hashes_per_request); 0 means DefaultMaxHashes. The parser
	// stops reading the array one entry past it.
	MaxHashes int
	// TimeStamper serves signatures/timestamp (csc.timestamp.enabled);
	// nil: the method answers 501 and info does not list it.
	TimeStamper TimeStamper

	// PageTokenKey is the MAC key of credentials/list page tokens, at
	// least 32 random bytes that survive restarts (kept in the store).
	PageTokenKey []byte // required
	// Revocation reports what the background status job last learned
	// about a credential's chain (*certstatus.Checker, csc.cert_status.*):
	// revoked, suspended or of unknown status, the key is disabled for
	// signing. nil = the validity dates only.
	Revocation Revocation
	Now        func() time.Time // nil = time.Now
	Logger     *slog.Logger     // nil = discard
	Metrics    Metrics          // nil = none
	// Login serves auth/login (csc.auth_login); nil = the method answers
	// 501 and info does not list it nor authType basic.
	Login PasswordLogin
	// Revoker serves auth/revoke; nil = 501.
	Revoker TokenRevoker
	// PIN checks signing PINs for credentials/authorize with the consent
	// page's lockout (*passwords.Checker). nil: credentials/authorize is not
	// offered (501) and info does not list it.
	PIN sad.PINChecker
	// TimestampLimit throttles signatures/timestamp per client (the
	// bearer's client_id, ratelimit.timestamp); AuthLoginLimit throttles
	// auth/login per remote address (ratelimit.auth_login: the method has
	// no client authentication, its tokens all go to one configured
	// client, so a bucket per client would be one bucket that anybody
	// could empty for everybody). nil = no limit. A refusal is 429 with
	// Retry-After (oauth.RateLimited), before the body is read.
	TimestampLimit, AuthLoginLimit *ratelimit.Limiter
	// SADTTL is the lifetime of a SAD that credentials/authorize or
	// credentials/extendTransaction issues (oauth.sad_ttl); 0 means
	// DefaultSADTTL.
	SADTTL time.Duration

	// certs decides about the credentials' certificates for every
	// method (Revocation and the parsed leaves).
	certs *protocol.Certs
	// methods are the methods Mount registered, in order: info lists
	// them.
	methods []string
}

// DefaultMaxHashes is the hash cap of a signHash request when
// Handler.MaxHashes is not set.
const DefaultMaxHashes = 100

// Methods CSC v1.0.4.0 defines: those Mount does not register answer 501,
// so a client can tell "not offered" from a typo (404).
var specMethods = []string{
	"auth/login", "auth/revoke", "credentials/authorize", "credentials/extendTransaction",
	"credentials/sendOTP", "signatures/timestamp",
}

// Mount registers the CSC routes on g, the /csc/v1 group. It fails when a
// required field is missing.
func (h *Handler) Mount(g *echo.Group) error {
	switch {
	case h.Store == nil:
		return errors.New("csc: no Store")
	case h.Signer == nil:
		return errors.New("csc: no Signer")
	case h.BaseURL == "":
		return errors.New("csc: no BaseURL")
	case len(h.PageTokenKey) < 32:
		return errors.New("csc: PageTokenKey must be at least 32 bytes")
	}
	if h.MaxResultsLimit <= 0 {
		h.MaxResultsLimit = 1000
	}
	if h.MaxResultsDefault <= 0 || h.MaxResultsDefault > h.MaxResultsLimit {
		h.MaxResultsDefault = min(100, h.MaxResultsLimit)
	}
	if h.MaxHashes <= 0 {
		h.MaxHashes = DefaultMaxHashes
	}
	bearer := oauth.RequireBearer(oauth.BearerConfig{
		Store: store.ViewAs(h.Store, func(tx protocol.Tx) oauth.BearerTx { return tx }),
		Now:   h.Now, Realm: h.BaseURL, Scope: "service",
	})
	// Group middleware also runs for unknown paths under /csc/v1 (Echo adds
	// catch-all routes for it), so their 404 is in the CSC dialect too.
	g.Use(oauth.WithDialect(h.dialect()))
	h.certs = &protocol.Certs{Revocation: liveRevocation{h}}
	r := protocol.NewRoutes(g)
	r.Method("info", h.info)
	r.Method("credentials/list", h.list, bearer)
	r.Method("credentials/info", h.credentialInfo, bearer)
	if err := h.mountSigning(r, bearer); err != nil {
		return err
	}
	if h.Login != nil {
		r.Method("auth/login", h.authLogin, limit(h.AuthLoginLimit, remoteAddress))
	}
	if h.Revoker != nil {
		r.Method("auth/revoke", h.authRevoke, bearer)
	}
	if h.TimeStamper != nil {
		r.Method("signatures/timestamp", h.timestamp, bearer, limit(h.TimestampLimit, bearerClient))
	}
	h.methods = r.Methods()
	for _, m := range specMethods {
		if !slices.Contains(h.methods, m) {
			g.Any("/"+m, notImplementedHandler(m))
		}
	}
	return nil
}

// mountSigning mounts the methods of the signing path: explicit
// authorization (package sad: credentials/authorize, extendTransaction,
// sendOTP) and signatures/signHash (package signhash), with this Handler's
// settings and one Certs for all.
func (h *Handler) mountSigning(r *protocol.Routes, bearer echo.MiddlewareFunc) error {
	authz := &sad.Handler{
		Store: liveStore{h}, Certs: h.certs, PIN: h.PIN, MaxHashes: h.MaxHashes, SADTTL: h.SADTTL,
		Now: h.now, Logger: h.logger(), Metrics: h.Metrics,
	}
	if err := authz.Mount(r, bearer); err != nil {
		return err
	}
	sign := &signhash.Handler{
		Store: liveStore{h}, Signer: h.Signer, Certs: h.certs, Clustered: h.Clustered, MaxHashes: h.MaxHashes,
		Now: h.now, Logger: h.logger(), Metrics: h.Metrics,
	}
	return sign.Mount(r, bearer)
}

// liveStore and liveRevocation are h's Store and Revocation as they are
// when a request uses them: the methods of the other packages read them
// at each request, as h's own do, so that a field set after Mount applies
// to every method alike.
type (
	liveStore      struct{ h *Handler }
	liveRevocation struct{ h *Handler }
)

func (s liveStore) View(ctx context.Context, fn func(Tx) error) error {
	return s.h.Store.View(ctx, fn)
}

func (s liveStore) Batch(ctx context.Context, fn func(Tx) error) error {
	return s.h.Store.Batch(ctx, fn)
}

// Status is Revocation's, and Valid and current without one (the
// validity dates only).
func (r liveRevocation) Status(chain [][]byte) (certstatus.Status, bool) {
	if r.h.Revocation == nil {
		return certstatus.Valid, true
	}
	return r.h.Revocation.Status(chain)
}

// limit is the route middleware of a rate-limited method: key names the
// request's bucket of l.
func limit(l *ratelimit.Limiter, key func(echo.Context) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := l.Allow(key(c)); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// remoteAddress is the bucket of the request's remote address (RealIP:
// forwarding headers only from server.trusted_proxies).
func remoteAddress(c echo.Context) string { return ratelimit.RemoteKey(c.RealIP()) }

// bearerClient is the bucket of the bearer's client.
func bearerClient(c echo.Context) string { return oauth.GrantFrom(c).ClientID }

func notImplementedHandler(method string) echo.HandlerFunc {
	return func(echo.Context) error {
		return &oauth.Error{
			Code: codeNotImplemented, Status: http.StatusNotImplemented,
			Description: "Method " + method + " is not implemented by this service (see info methods)",
		}
	}
}

// oauth2Base is info's oauth2: the base URI the authorization server's
// oauth2/authorize and oauth2/token hang off.
func (h *Handler) oauth2Base() string {
	return strings.TrimSuffix(h.BaseURL, "/")
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

package csc

import (
	"context"
	"crypto"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store"
)

// Tx is what the CSC API uses of a store transaction: the credentials, the
// SAD with its client and user, the SAD's consumption (and its return when
// no signature was made) together with its audit entry.
type Tx interface {
	// CredentialReader: credentials/list, credentials/info and the SAD's
	// credential.
	store.CredentialReader
	// TokenReader, ClientReader, UserReader: the SAD and whether its
	// client and user still may sign (and the bearer check).
	store.TokenReader
	store.ClientReader
	store.UserReader
	// RevocationReader: the bearer check's cache of accepted tokens.
	store.RevocationReader
	// DeleteToken consumes a SAD (store.TokenTx).
	DeleteToken(hash []byte) error
	// CreateToken gives a SAD back when signing failed before any
	// signature was made (store.TokenTx).
	CreateToken(t *store.Token) error
	// AuditAppender: the signHash entry, in the SAD's transaction.
	store.AuditAppender
}

// Store is the CSC API's view of the store (store.Scope makes one): read
// transactions, and Batch — a write transaction that may be grouped with
// concurrent ones and whose function may run more than once (store/bolt
// implements it as group commit).
type Store interface {
	View(ctx context.Context, fn func(Tx) error) error
	Batch(ctx context.Context, fn func(Tx) error) error
}

var (
	_ Store           = (*store.Scoped[Tx])(nil)
	_ oauth.BearerTx  = Tx(nil)
	_ CredentialStore = (*store.Scoped[store.CredentialReader])(nil)
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
	// its meaning through methods (see signerError): it proves that none
	// was made (NotSigned) only when the HSM made none of the batch.
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

// PSSReporter is a Signer that says whether its token signs RSASSA-PSS
// (*hsm.Token.SignsPSS). credentials/info lists no RSASSA-PSS for a
// Signer that reports false.
type PSSReporter interface {
	SignsPSS() bool
}

// Revocation is the cached revocation status of certificate chains
// (*certstatus.Checker satisfies it). Status only reads a cache: it is
// called on the signing path.
type Revocation interface {
	// Status returns the chain's last known status (certstatus.Valid,
	// Revoked or Suspended) and whether that answer is current; a chain
	// whose certificates name no OCSP responder or CRL is Valid and
	// current.
	Status(chain [][]byte) (certstatus.Status, bool)
}

// Metrics receives measurements; cmd adapts it to Prometheus. Methods must
// be safe for concurrent use and must not block.
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
	// ObserveAuthorize is called once per credentials/authorize (method
	// "authorize") and credentials/extendTransaction ("extendTransaction")
	// request that reached the handler, with its result: "granted" (a SAD
	// issued), "wrong_pin" (the PIN or OTP was wrong), "locked" (the PIN
	// is locked), "refused" (any other client error) or "error" (the
	// server could not answer: store or HSM unavailable, internal error).
	ObserveAuthorize(method, result string)
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
	PIN PINChecker
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

	leaves leafCache
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
		Store: store.ViewAs(h.Store, func(tx Tx) oauth.BearerTx { return tx }),
		Now:   h.Now, Realm: h.BaseURL, Scope: "service",
	})
	// Group middleware also runs for unknown paths under /csc/v1 (Echo adds
	// catch-all routes for it), so their 404 is in the CSC dialect too.
	g.Use(oauth.WithDialect(h.dialect()))
	h.methods = nil
	h.route(g, "info", h.info, postOnly)
	h.route(g, "credentials/list", h.list, postOnly, bearer)
	h.route(g, "credentials/info", h.credentialInfo, postOnly, bearer)
	if h.PIN != nil {
		h.route(g, "credentials/authorize", h.authorize, postOnly, bearer)
	}
	h.route(g, "credentials/extendTransaction", h.extendTransaction, postOnly, bearer)
	h.route(g, "credentials/sendOTP", h.sendOTP, postOnly, bearer)
	h.route(g, "signatures/signHash", h.signHash, postOnly, traceTask("signHash", bearer))
	if h.Login != nil {
		h.route(g, "auth/login", h.authLogin, postOnly, limit(h.AuthLoginLimit, remoteAddress))
	}
	if h.Revoker != nil {
		h.route(g, "auth/revoke", h.authRevoke, postOnly, bearer)
	}
	if h.TimeStamper != nil {
		h.route(g, "signatures/timestamp", h.timestamp, postOnly, bearer, limit(h.TimestampLimit, bearerClient))
	}
	for _, m := range specMethods {
		if !slices.Contains(h.methods, m) {
			g.Any("/"+m, notImplementedHandler(m))
		}
	}
	return nil
}

// route registers the CSC method name on g and lists it in info.
func (h *Handler) route(g *echo.Group, name string, fn echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	g.Any("/"+name, fn, mw...)
	h.methods = append(h.methods, name)
}

// postOnly refuses every HTTP method but POST (CSC v1 §7.1) before the
// bearer is looked at.
func postOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodPost {
			return echo.ErrMethodNotAllowed
		}
		return next(c)
	}
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

// oauth2Base is info's oauth2: the base URI the authorization server's
// oauth2/authorize and oauth2/token hang off.
func (h *Handler) oauth2Base() string {
	return strings.TrimSuffix(h.BaseURL, "/")
}

package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
)

// Grant is what a valid bearer access token stands for. RequireBearer puts
// it on the echo.Context; GrantFrom reads it back.
type Grant struct {
	TokenHash   []byte // store.Fingerprint of the token
	ClientID    string
	Username    string
	Scopes      []string
	AuthTime    time.Time // when the user authenticated
	RequestedAt time.Time // when the authorization request arrived
	ExpiresAt   time.Time
}

const grantKey = "signd.oauth.grant"

// GrantFrom returns the Grant RequireBearer stored, or nil.
func GrantFrom(c echo.Context) *Grant {
	g, _ := c.Get(grantKey).(*Grant)
	return g
}

// BearerConfig configures RequireBearer.
type BearerConfig struct {
	Store BearerStore
	Now   func() time.Time // nil = time.Now
	// Realm goes into WWW-Authenticate (the issuer, server.base_url).
	Realm string
	// Scope is the scope the token must carry ("service" for the CSC API,
	// "openid" for /userinfo); a token without it gets 403
	// insufficient_scope.
	Scope string
	// AllowFormBody also accepts the token as the access_token field of a
	// POST application/x-www-form-urlencoded body (RFC 6750 §2.2).
	AllowFormBody bool
	// CacheSize bounds the cache of accepted tokens (bearercache.go): 0 is
	// DefaultBearerCacheSize, negative turns the cache off. A cached
	// verdict is used only while the store's revocation generation is the
	// one it was read at, so the cache never accepts what the store would
	// refuse.
	CacheSize int
}

// RequireBearer returns middleware that authenticates an RFC 6750 bearer
// access token. On failure the handler chain gets an *Error:
//   - no credentials: Code "" (RFC 6750 §3.1: no error code), status 401;
//   - a malformed Authorization header or two credentials: invalid_request, 400;
//   - unknown or revoked token, a SAD, a removed client, or a missing or
//     disabled user: invalid_token, 401;
//   - expired token: expired_token, 401;
//   - a token without cfg.Scope: insufficient_scope, 403.
//
// Every failure carries WWW-Authenticate: Bearer realm="…"[, error="…"].
// A SAD is never accepted as a bearer token.
func RequireBearer(cfg BearerConfig) echo.MiddlewareFunc {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	fail := func(code, desc string, status int) *Error {
		return BearerError(cfg.Realm, code, desc, status)
	}
	cache := newBearerCache(cfg.CacheSize)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token, perr := bearerToken(c.Request(), cfg.AllowFormBody)
			if perr != nil {
				return fail(CodeInvalidRequest, perr.Error(), http.StatusBadRequest)
			}
			if token == "" {
				return fail("", "", http.StatusUnauthorized)
			}
			key := sha256.Sum256([]byte(token)) // store.Fingerprint, without the allocation
			t := now()
			var (
				e    bearerEntry
				hit  bool
				tok  *store.Token
				user *store.User
			)
			err := cfg.Store.View(c.Request().Context(), func(tx BearerTx) (err error) {
				gen, err := tx.RevocationGeneration()
				if err != nil {
					return err
				}
				if e, hit = cache.get(key, gen, t); hit {
					return nil
				}
				if tok, err = tx.Token(key[:]); err != nil {
					return err
				}
				// A removed client's tokens are revoked with it; checking
				// here too means a token the revocation missed still fails.
				if _, err = tx.Client(tok.ClientID); err != nil {
					return err
				}
				if user, err = tx.User(tok.Username); err != nil {
					return err
				}
				e.gen = gen
				return nil
			})
			switch {
			case errors.Is(err, store.ErrNotFound):
				return fail(CodeInvalidToken, "The access token is invalid or revoked", http.StatusUnauthorized)
			case errors.Is(err, context.Canceled):
				return err
			case err != nil:
				return err // the renderer turns it into server_error
			case hit:
			case tok.Kind != store.TokenAccess:
				return fail(CodeInvalidToken, "The access token is invalid or revoked", http.StatusUnauthorized)
			case !t.Before(tok.ExpiresAt):
				return fail(CodeExpiredToken, "The access token has expired", http.StatusUnauthorized)
			case user.Status != store.UserActive:
				return fail(CodeInvalidToken, "The access token is invalid or revoked", http.StatusUnauthorized)
			default:
				e.grant = Grant{
					TokenHash: tok.Hash, ClientID: tok.ClientID, Username: tok.Username,
					Scopes: tok.Scopes, AuthTime: tok.AuthTime, RequestedAt: tok.RequestedAt,
					ExpiresAt: tok.ExpiresAt,
				}
				cache.put(key, e)
			}
			if cfg.Scope != "" && !slices.Contains(e.grant.Scopes, cfg.Scope) {
				return fail(CodeInsufficientScope, "The access token does not grant scope "+cfg.Scope, http.StatusForbidden)
			}
			g := e.grant // the handler gets its own copy
			g.TokenHash, g.Scopes = slices.Clone(g.TokenHash), slices.Clone(g.Scopes)
			c.Set(grantKey, &g)
			return next(c)
		}
	}
}

// errMalformed explains a malformed bearer request; its text is the
// error_description, ASCII English.
type errMalformed string

func (e errMalformed) Error() string { return string(e) }

// bearerToken extracts the token from the Authorization header or, when
// allowed, the form body. It returns "" when there is none.
func bearerToken(r *http.Request, allowForm bool) (string, error) {
	hs := r.Header.Values("Authorization")
	var header string
	switch len(hs) {
	case 0:
	case 1:
		scheme, value, ok := strings.Cut(hs[0], " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", errMalformed("Authorization header is not a Bearer token")
		}
		header = strings.TrimSpace(value)
		if header == "" || !token68(header) {
			return "", errMalformed("Malformed Bearer token")
		}
	default:
		return "", errMalformed("More than one Authorization header")
	}
	if !allowForm || r.Method != http.MethodPost ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return header, nil
	}
	if err := r.ParseForm(); err != nil {
		return "", errMalformed("Malformed form body")
	}
	form := r.PostForm["access_token"]
	switch {
	case len(form) > 1:
		return "", errMalformed("access_token given more than once")
	case len(form) == 1 && header != "":
		return "", errMalformed("Bearer token given in both the header and the body")
	case len(form) == 1:
		if form[0] == "" || !token68(form[0]) {
			return "", errMalformed("Malformed Bearer token")
		}
		return form[0], nil
	}
	return header, nil
}

// token68 reports whether s has the b64token syntax of RFC 6750 §2.1.
func token68(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~+/=", c) >= 0:
		default:
			return false
		}
	}
	return len(s) <= 4096
}

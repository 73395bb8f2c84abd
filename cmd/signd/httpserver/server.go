package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/signd/signd/cmd/signd/reqlog"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// Pinger is what readiness needs of the token; *hsm.Token satisfies it.
type Pinger interface {
	Ping(ctx context.Context) error
	Status() hsm.Status
}

// capabilityReporter is the token's self-description for /readyz;
// *hsm.Token satisfies it.
type capabilityReporter interface {
	Capabilities() *hsm.Capabilities
}

// Server builds the public Echo router: the middleware every request
// passes, the error renderer, the health endpoints and the pages'
// resources; cmd/signd mounts the OAuth, CSC and OIDC handlers on it.
type Server struct {
	Store     store.Store
	Token     Pinger
	Logger    *slog.Logger
	BodyLimit int64
	TLS       bool // signd terminates TLS (server.tls)
	// HSTS sends Strict-Transport-Security (RFC 6797) on every answer: set
	// it when browsers reach signd over https, whether signd terminates
	// TLS or a reverse proxy in front of it does (server.base_url is
	// https); never for a plain-http development base_url.
	HSTS bool
	// TrustedProxies are the reverse proxies (server.trusted_proxies)
	// whose X-Forwarded-For and X-Real-IP are believed; none = the socket
	// peer is the client.
	TrustedProxies []*net.IPNet
	// ClientIPHeader is the header TrustedProxies name the client in
	// (server.client_ip_header): config.HeaderXRealIP, or else
	// X-Forwarded-For.
	ClientIPHeader string
	// Pages renders the HTML pages (ui.*), the error pages among them, and
	// serves the logo; nil = the built-in look.
	Pages *pages.Pages
	// OnReadiness, when set, hears every readiness verdict (metrics).
	OnReadiness func(ready bool)
}

// Echo is the router. It wraps Logger in reqlog.Handler, so that every
// record logged with a request's context names the request.
func (s *Server) Echo() *echo.Echo {
	s.Logger = reqlog.WithRequestID(s.Logger)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// The one error renderer: each protocol route tagged its dialect; the
	// health endpoints, unknown paths and the body limit answer in the
	// daemon's own JSON.
	if s.Pages == nil {
		p, err := pages.New(pages.Options{})
		if err != nil {
			panic(err) // the built-in templates are embedded: every test would fail
		}
		s.Pages = p
	}
	e.HTTPErrorHandler = oauth.NewRenderer(s.Logger).WithPages(s.Pages).Handle
	e.IPExtractor = clientIP(s.TrustedProxies, s.ClientIPHeader)
	e.Use(
		reqlog.RequestID,
		remoteOrigin,
		(&reqlog.AccessLog{Logger: s.Logger}).Middleware(),
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			DisableErrorHandler: true, // the panic becomes an error for the renderer: a bare 500
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				s.Logger.Error("panic", "path", reqlog.LogPath(c.Request().URL.Path), "err", err, "stack", string(stack))
				return err
			},
		}),
		s.securityHeaders,
		s.bodyLimit,
	)
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", s.readyz)
	// The pages' own resources: the logo (ui.logo_file) and the language
	// switch.
	e.GET(pages.LogoRoute, s.Pages.ServeLogo)
	e.GET(pages.LangRoute, s.Pages.SwitchLang)
	return e
}

// remoteOrigin puts the request's remote address (c.RealIP: clientIP's
// policy, the address the rate limits key on) into its context as the IP
// of a passwords.Origin, for the audit entries of logins and locks: the
// CSC API's handlers past the request's parsing see only its context.
func remoteOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		c.SetRequest(req.WithContext(passwords.WithOrigin(req.Context(), passwords.Origin{IP: c.RealIP()})))
		return next(c)
	}
}

// clientIP is how c.RealIP (the logged remote_ip) finds the client. With
// no trusted proxy it is the socket peer, whatever the headers say. With
// trusted proxies, and only when the socket peer is one of them, the one
// header they write (server.client_ip_header; the other is ignored, since
// a proxy that does not write it passes the client's through):
// X-Forwarded-For's first address, read from the right, that is not a
// trusted proxy (a client can write the left part, never the right), or
// X-Real-IP. Echo's own extractors do the parsing; their default trust of
// loopback, link-local and private addresses is turned off, so a sidecar
// or a neighbour on the LAN cannot name itself someone else.
func clientIP(trusted []*net.IPNet, header string) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	if http.CanonicalHeaderKey(header) == echo.HeaderXRealIP {
		return echo.ExtractIPFromRealIPHeader(opts...)
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// storeHealth is what readiness asks of the store beyond answering a read;
// *bolt.DB and *etcd.DB satisfy it.
type storeHealth interface {
	// Health is nil, or wraps store.ErrCorrupt or store.ErrUnavailable. It
	// answers in bounded time whatever the store does (etcd: within
	// store.etcd.health_timeout, the probes that come while a check runs
	// sharing it), which bounds /readyz.
	Health() error
}

// readyz answers 200 when the token's persistent session and the store
// answer and the store can write, 503 naming the failing part (and for the
// store the reason) otherwise.
func (s *Server) readyz(c echo.Context) error {
	status, body := s.Readiness(c.Request().Context())
	if status != http.StatusOK {
		if body["component"] == "store" {
			c.Response().Header().Set("Retry-After", oauth.RetryAfter)
		}
		return c.JSON(status, body)
	}
	ready := ReadyBody{Status: "ready"}
	if r, ok := s.Token.(capabilityReporter); ok {
		ready.HSM = tokenSummary(r.Capabilities())
	}
	return c.JSON(http.StatusOK, ready)
}

// Readiness is /readyz's verdict: 200 and nil, or 503 and the body naming
// the failing part. serve asks it too before telling systemd READY=1.
func (s *Server) Readiness(ctx context.Context) (int, map[string]string) {
	status, body := s.verdict(ctx)
	if s.OnReadiness != nil {
		s.OnReadiness(status == http.StatusOK)
	}
	return status, body
}

// verdict is Readiness, unrecorded.
func (s *Server) verdict(ctx context.Context) (int, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.Token.Ping(ctx); err != nil {
		s.Logger.Warn("not ready: hsm", "err", err)
		return http.StatusServiceUnavailable, map[string]string{
			"status": "unavailable", "component": "hsm", "reason": hsmReason(s.Token.Status(), err),
		}
	}
	reason := "store not readable"
	err := s.Store.View(ctx, func(store.Tx) error { return nil })
	if h, ok := s.Store.(storeHealth); ok && err == nil {
		reason = "store not writable"
		err = h.Health()
	}
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			reason = "store damaged"
		}
		s.Logger.Warn("not ready: "+reason, "err", err)
		return http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "component": "store", "reason": reason}
	}
	return http.StatusOK, nil
}

// ReadyBody is /readyz's answer when ready.
type ReadyBody struct {
	Status string      `json:"status"`
	HSM    *ReadyToken `json:"hsm,omitempty"`
}

// ReadyToken is the token as /readyz describes it: enough to tell
// which kind of token a node runs on and what it can sign with, without
// the module path, serial number or firmware (`signd hsm info` has them,
// on the admin socket).
type ReadyToken struct {
	Manufacturer    string   `json:"manufacturer"`
	Model           string   `json:"model"`
	CryptokiVersion string   `json:"cryptoki_version"`
	Profile         string   `json:"profile"`
	Mechanisms      []string `json:"mechanisms"`
}

func tokenSummary(c *hsm.Capabilities) *ReadyToken {
	if c == nil {
		return nil
	}
	b := &ReadyToken{Manufacturer: c.Manufacturer, Model: c.Model, CryptokiVersion: c.CryptokiVersion, Profile: c.Profile, Mechanisms: []string{}}
	for _, m := range c.Mechanisms {
		if m.Present {
			b.Mechanisms = append(b.Mechanisms, m.Name)
		}
	}
	return b
}

// hsmReason says why the token is not ready, without PKCS#11 detail (the
// log has it).
func hsmReason(st hsm.Status, err error) string {
	switch {
	case st.Reason != "":
		return st.Reason
	case errors.Is(err, hsm.ErrBusy):
		return "all sessions busy"
	case errors.Is(err, context.DeadlineExceeded):
		return "token did not answer in time"
	}
	return "token check failed"
}

func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("Cache-Control", "no-store")
		if s.HSTS {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		return next(c)
	}
}

// bodyLimit refuses bodies over BodyLimit bytes: early from Content-Length,
// otherwise while reading.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.BodyLimit {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", s.BodyLimit))
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, s.BodyLimit)
		return next(c)
	}
}

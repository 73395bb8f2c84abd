// Package httpserver is the public HTTP server's frame, below the
// protocols: Server builds the Echo router with the middleware every
// request passes (request ID and access log from reqlog, the client's
// address behind trusted proxies, panic recovery, security headers, the
// body limit), the one error renderer (oauth.Renderer with the pages), the
// health endpoints (/healthz; /readyz, whose verdict also tells systemd
// READY=1 and feeds signd_ready) and the pages' logo and language switch.
// CertSource serves the TLS certificate that a SIGHUP reload swaps; Drain
// shuts the daemon's servers down together at the end.
//
// cmd/signd fills a Server from the configuration and mounts the OAuth,
// CSC, OIDC and admin services on its router.
package httpserver

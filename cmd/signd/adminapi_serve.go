package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/config"
	"github.com/signd/signd/config/clientca"
)

// provisioningAPI is the provisioning API as read at start (prepareAPI),
// before it listens (listen).
type provisioningAPI struct {
	gate   *adminapi.Gate
	cert   *atomic.Pointer[tls.Certificate]
	addr   string // admin.api_listen
	logger *slog.Logger
	// reload, for reload.Reloader.API, reads the API's certificate and
	// key and its CRL again (apiReload).
	reload func(*config.Config) (apply func(), crl *x509.RevocationList, err error)
}

// prepareAPI reads what the provisioning API serves with (nil when
// admin.api_listen is empty): the client CAs (admin.api_client_ca), the
// roles of their certificates, the API's certificate and key and its
// CRL, which is in force from here on (gate.CRLInForce, recorded in the
// start's config_loaded entry).
func prepareAPI(cfg *config.Config, now func() time.Time, logger *slog.Logger) (*provisioningAPI, error) {
	a := cfg.Admin.AdminAPIConfig
	if a.APIListen == "" {
		return nil, nil
	}
	cas, err := clientca.ReadCAs(a.APIClientCA)
	if err != nil {
		return nil, fmt.Errorf("admin.api_client_ca: %w", err)
	}
	p := &provisioningAPI{gate: &adminapi.Gate{ClientCAs: cas, Now: now, Logger: logger}, cert: &atomic.Pointer[tls.Certificate]{},
		addr: a.APIListen, logger: logger}
	if p.gate.Roles, err = admin.CertRoleMap(a.APIRoles.Map()); err != nil {
		return nil, err
	}
	p.reload = apiReload(p.gate, cas, p.cert, now)
	apply, _, err := p.reload(cfg)
	if err != nil {
		return nil, err
	}
	apply()
	return p, nil
}

// listen opens the provisioning API's listener: TLS with
// admin.api_cert_file and the client certificates of admin.api_client_ca,
// each caller named by its certificate and acting through local. The
// API's own refusals go into local's audit log.
func (p *provisioningAPI) listen(local *admin.Local) (*http.Server, net.Listener, error) {
	p.gate.Refused = local.Refused
	e := adminrpc.NewRouter(p.logger)
	if err := (&adminapi.Handler{Service: local, Gate: p.gate, Logger: p.logger}).Mount(e.Group("")); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("admin.api_listen %s: %w", p.addr, err)
	}
	srv := &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      5 * time.Minute, // an audit export streams the whole log
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(p.logger.Handler(), slog.LevelWarn),
	}
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.cert.Load(), nil }
	return srv, p.gate.Listen(ln, p.gate.TLSConfig(getCert)), nil
}

// apiReload returns the function that reads the provisioning API's
// certificate and key and its CRL of a configuration; apply puts them in
// force (cert, gate.SetCRL), crl is the CRL it puts in force (nil: none).
// The CRL is checked against cas, the CAs read at start (a change of
// the file admin.api_client_ca names needs a restart and is refused; a
// change of the key is refused as that of every key without Reload),
// and against the CRL in force (clientca.Replaces at now): a reload
// never removes it, changes its issuer, goes back to an older one or
// puts one out of date in force.
// The first call, at start, has no CRL in force: any CRL of cas goes.
// now nil = time.Now.
func apiReload(gate *adminapi.Gate, cas []*x509.Certificate, cert *atomic.Pointer[tls.Certificate], now func() time.Time) func(*config.Config) (func(), *x509.RevocationList, error) {
	if now == nil {
		now = time.Now
	}
	started := false
	return func(cfg *config.Config) (func(), *x509.RevocationList, error) {
		a := cfg.Admin.AdminAPIConfig
		pair, err := tls.LoadX509KeyPair(a.APICertFile, a.APIKeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("admin.api_cert_file, api_key_file: %w", err)
		}
		if started {
			now, err := clientca.ReadCAs(a.APIClientCA)
			if err != nil {
				return nil, nil, fmt.Errorf("admin.api_client_ca: %w", err)
			}
			if !slices.EqualFunc(now, cas, (*x509.Certificate).Equal) {
				return nil, nil, errors.New("admin.api_client_ca: its CA certificates changed since start; a change of the client CAs needs a restart")
			}
		}
		var crl *x509.RevocationList
		if a.APIClientCRL != "" {
			if crl, err = clientca.ReadCRL(a.APIClientCRL, cas, now()); err != nil {
				return nil, nil, fmt.Errorf("admin.api_client_crl: %w", err)
			}
		}
		if started {
			if err := clientca.Replaces(gate.CRLInForce(), crl, cas, now()); err != nil {
				return nil, nil, fmt.Errorf("admin.api_client_crl: %w", err)
			}
		}
		return func() { started = true; cert.Store(&pair); gate.SetCRL(crl) }, crl, nil
	}
}

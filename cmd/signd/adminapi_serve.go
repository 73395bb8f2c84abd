package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/config"
	"github.com/signd/signd/config/clientca"
)

// listenAPI opens the provisioning API's listener (admin.api_listen;
// nil when it is empty): TLS with admin.api_cert_file and the client
// certificates of admin.api_client_ca, each caller named by its
// certificate and acting through local. The API's own refusals go into
// local's audit log.
func listenAPI(cfg *config.Config, local *admin.Local, now func() time.Time, logger *slog.Logger) (*http.Server, net.Listener, error) {
	a := cfg.Admin.AdminAPIConfig
	if a.APIListen == "" {
		return nil, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(a.APICertFile, a.APIKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("admin.api_cert_file, api_key_file: %w", err)
	}
	cas, err := clientca.ReadCAs(a.APIClientCA)
	if err != nil {
		return nil, nil, fmt.Errorf("admin.api_client_ca: %w", err)
	}
	gate := &adminapi.Gate{ClientCAs: cas, Now: now, Refused: local.Refused, Logger: logger}
	if a.APIClientCRL != "" {
		if gate.CRL, err = clientca.ReadCRL(a.APIClientCRL, cas); err != nil {
			return nil, nil, fmt.Errorf("admin.api_client_crl: %w", err)
		}
	}
	if gate.Roles, err = admin.CertRoleMap(a.APIRoles.Map()); err != nil {
		return nil, nil, err
	}
	e := adminrpc.NewRouter(logger)
	if err := (&adminapi.Handler{Service: local, Gate: gate, Logger: logger}).Mount(e.Group("")); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", a.APIListen)
	if err != nil {
		return nil, nil, fmt.Errorf("admin.api_listen %s: %w", a.APIListen, err)
	}
	srv := &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      5 * time.Minute, // an audit export streams the whole log
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
	return srv, gate.Listen(ln, gate.TLSConfig(getCert)), nil
}

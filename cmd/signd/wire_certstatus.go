package main

import (
	"context"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/store"
)

var _ csc.Revocation = (*certstatus.Checker)(nil)

// certStatus builds the revocation checker of csc.cert_status and starts
// its background job, which lists every credential with a certificate
// (enabled and disabled: credentials/info reports cert.status for both)
// and the chains of the TSA certificates (s.tsa, which it checks);
// nil when csc.cert_status.enabled is false. The checker is kept in
// s.certStatusChecker for a SIGHUP reload (reload.Reloader.CertStatus).
func (s *services) certStatus() csc.Revocation {
	c := s.cfg.CSC.CertStatus
	if !c.Enabled {
		return nil
	}
	cfg := certstatus.Config{
		// No Client time limit: Timeout bounds each fetch through its
		// context, and a reload changes it.
		Timeout:    c.Timeout,
		Refresh:    c.Refresh,
		OCSPMaxAge: c.OCSPMaxAge,
		// Loopback only in tests; link-local, unspecified and
		// multicast addresses never, nor redirects.
		AllowLoopback: s.certStatusLoopback,
		Now:           s.now,
		Logger:        s.logger.With("service", "certstatus"),
	}
	if s.metrics != nil {
		cfg.Metrics = s.metrics
	}
	checker := certstatus.New(cfg)
	s.certStatusChecker = checker
	if s.tsa != nil {
		// The TSA's certificate signs under the credentials' rule.
		s.tsa.Revocation = checker
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		checker.Run(ctx, func(ctx context.Context) ([][][]byte, error) {
			var chains [][][]byte
			err := s.views.credential.View(ctx, func(tx store.CredentialReader) error {
				cs, err := tx.Credentials("", "", 0)
				for _, c := range cs {
					if len(c.Chain) > 0 {
						chains = append(chains, c.Chain)
					}
				}
				return err
			})
			if err != nil || s.tsa == nil {
				return chains, err
			}
			// The TSA's: a token read. Without them the credentials'
			// are still refreshed; the TSA then refuses to stamp (its
			// status not current) until the token answers.
			tsaChains, terr := s.tsa.Chains(ctx)
			if terr != nil {
				s.logger.Warn("certificate status: the TSA certificates cannot be read from the token", "err", terr)
			}
			return append(chains, tsaChains...), nil
		})
	}()
	s.onShutdown = append(s.onShutdown, func() { cancel(); <-done })
	return checker
}

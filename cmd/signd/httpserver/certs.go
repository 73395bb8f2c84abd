package httpserver

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
)

// CertSource serves the TLS certificate through tls.Config.GetCertificate
// so that a reload swaps it for new handshakes; connections already open
// keep theirs.
type CertSource struct {
	cert atomic.Pointer[tls.Certificate]
}

// Load reads the pair; on error the current certificate stays.
func (s *CertSource) Load(certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("server.tls: %w", err)
	}
	s.cert.Store(&cert)
	return nil
}

// GetCertificate is tls.Config.GetCertificate: the pair loaded last.
func (s *CertSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.cert.Load(), nil
}

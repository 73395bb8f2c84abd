package adminapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/internal/crlscope"
)

// Refuser records a refusal in the audit log: admin.Local.Refused.
type Refuser func(ctx context.Context, by admin.Principal, op, reason string, fields map[string]string)

// Gate decides which client certificates may call the API.
type Gate struct {
	// ClientCAs issue the client certificates (admin.api_client_ca).
	ClientCAs []*x509.Certificate
	// CRL, when set, lists revoked client certificates
	// (admin.api_client_crl); its signature was checked when it was read.
	// SetCRL replaces it on a gate that serves.
	CRL *x509.RevocationList
	// Roles grants the certificates their roles (admin.api_roles).
	Roles admin.RoleMap
	// Now is the clock of certificate and CRL validity; nil = time.Now.
	Now func() time.Time
	// Refused audits a refused handshake; nil = only the log line.
	Refused Refuser
	// HandshakeTimeout bounds a TLS handshake; 0 = 10 s.
	HandshakeTimeout time.Duration
	Logger           *slog.Logger // nil = discard

	// reloaded is the CRL SetCRL gave; nil until then (CRL holds).
	reloaded atomic.Pointer[crlRef]
}

type crlRef struct{ crl *x509.RevocationList }

// SetCRL replaces the CRL for every handshake from now on (a SIGHUP
// reload of admin.api_client_crl); nil = none.
func (g *Gate) SetCRL(crl *x509.RevocationList) { g.reloaded.Store(&crlRef{crl}) }

// CRLInForce is the CRL in force: SetCRL's, else CRL.
func (g *Gate) CRLInForce() *x509.RevocationList {
	if r := g.reloaded.Load(); r != nil {
		return r.crl
	}
	return g.CRL
}

// handshakeOp names a refused handshake in its admin_refused entry.
const handshakeOp = "tls_handshake"

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Gate) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// TLSConfig is the API's TLS configuration: TLS 1.2 or later, the server
// certificate from getCert (admin.api_cert_file, reloaded on SIGHUP), a client
// certificate required and verified against ClientCAs, then checked
// against the CRL and the roles (verify).
func (g *Gate) TLSConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	pool := x509.NewCertPool()
	for _, c := range g.ClientCAs {
		pool.AddCert(c)
	}
	return &tls.Config{
		MinVersion:       tls.VersionTLS12,
		GetCertificate:   getCert,
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        pool,
		Time:             g.now,
		VerifyConnection: g.verify,
		NextProtos:       []string{"http/1.1"},
	}
}

// refusal is a client certificate the gate refuses after the chain check.
type refusal struct {
	cert   *x509.Certificate
	reason string
}

func (r *refusal) Error() string { return "provisioning API: " + r.reason }

// verify runs after the standard library verified the chain: the
// certificate must not be revoked (CRL, on any verified chain: check) and
// must hold a role.
func (g *Gate) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 || len(cs.VerifiedChains) == 0 {
		return errors.New("provisioning API: no verified client certificate") // not reached with RequireAndVerifyClientCert
	}
	cert := cs.PeerCertificates[0]
	if reason := g.check(cs.VerifiedChains, false); reason != "" {
		return &refusal{cert, reason}
	}
	if len(g.Roles.CertRoles(cert)) == 0 {
		return &refusal{cert, "the client certificate holds no role: admin.api_roles names neither its subject nor its key"}
	}
	return nil
}

// check says why the gate refuses a client certificate with these
// verified chains, "" when it does not. A certificate verifies through
// more than one chain when admin.api_client_ca holds a cross-signed CA
// (its certificate from two issuers): a certificate that the CRL lists
// on any chain is refused, whatever chain another check would pick (its
// issuer revoked it; a path around the revocation does not undo it);
// otherwise one chain whose every check passes admits it (revoked: the
// CRL covers it; expired, with expiry, each certificate of it is still
// valid), and when none does the first chain's reason is given.
func (g *Gate) check(chains [][]*x509.Certificate, expiry bool) string {
	first, passed := "", false
	for _, chain := range chains {
		reason, listed := g.revoked(chain)
		if listed {
			return reason
		}
		if reason == "" && expiry {
			reason = g.expired(chain)
		}
		switch {
		case reason == "":
			passed = true
		case first == "":
			first = reason
		}
	}
	if passed {
		return ""
	}
	return first
}

// expired says which certificate of chain expired by the gate's clock,
// "" when none did. The handshake checked the chain's validity; a
// connection kept alive past it is not.
func (g *Gate) expired(chain []*x509.Certificate) string {
	for _, c := range chain {
		if g.now().After(c.NotAfter) {
			return fmt.Sprintf("the certificate %s of the client's chain expired at %s", c.Subject, c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

// revoked says why the CRL in force refuses the verified chain, "" when
// it does not, and whether the CRL lists a certificate of it: the CRL is out of date; it lists a certificate of the
// chain its issuer issued (the client certificate, or an intermediate
// when the CRL is a root's); or the client certificate cannot be
// checked: its issuer is not the CRL's issuer (a certificate of another
// CA of admin.api_client_ca, or one under an intermediate whose CRL is
// not the one given), or the CRL's scope (issuingDistributionPoint,
// RFC 5280 §6.3.3) does not include a certificate the CRL's issuer
// issued. A CRL revokes a certificate of its issuer only: the issuer is
// told by its subject and, when both are there, the CRL's authority key
// identifier and the CA's subject key identifier. The handshake asks
// (verify), and so does every request on the connection (Handler): a
// certificate revoked, or a CRL gone out of date, while a kept-alive
// connection is open is refused at its next request.
func (g *Gate) revoked(chain []*x509.Certificate) (reason string, listed bool) {
	crl := g.CRLInForce()
	if crl == nil || len(chain) == 0 {
		return "", false
	}
	if next := crl.NextUpdate; !next.IsZero() && g.now().After(next) {
		return fmt.Sprintf("the CRL admin.api_client_crl is out of date since %s: revocations after it are unknown, so no certificate is accepted until it is replaced", next.UTC().Format(time.RFC3339)), false
	}
	unchecked := ""
	for i := len(chain) - 2; i >= 0; i-- {
		cert, issuer := chain[i], chain[i+1]
		if !issued(crl, issuer) {
			continue
		}
		if err := crlscope.Covers(crl, cert); err != nil {
			if unchecked == "" {
				unchecked = fmt.Sprintf("the certificate %s of the client's chain cannot be checked against admin.api_client_crl: %v", cert.Subject, err)
			}
			continue
		}
		for _, e := range crl.RevokedCertificateEntries {
			if e.SerialNumber.Cmp(cert.SerialNumber) != 0 {
				continue
			}
			if i == 0 {
				return fmt.Sprintf("the client certificate (serial %s) is revoked (admin.api_client_crl, since %s)", cert.SerialNumber, e.RevocationTime.UTC().Format(time.RFC3339)), true
			}
			return fmt.Sprintf("the certificate %s (serial %s) of the client's chain is revoked (admin.api_client_crl, since %s)", cert.Subject, cert.SerialNumber, e.RevocationTime.UTC().Format(time.RFC3339)), true
		}
	}
	switch {
	case unchecked != "":
		return unchecked, false
	case len(chain) < 2 || !issued(crl, chain[1]):
		return fmt.Sprintf("the client certificate is issued by %s, not by %s, the issuer of admin.api_client_crl: its revocation cannot be checked (give the API the full CRL of the CA that issues the client certificates)", chain[0].Issuer, crl.Issuer), false
	}
	return "", false
}

// issued reports whether ca is the issuer of crl: the CRL's issuer is
// its subject, byte for byte, and the CRL's authority key identifier,
// when both are present, its subject key identifier (RFC 5280 §5.2.1).
func issued(crl *x509.RevocationList, ca *x509.Certificate) bool {
	if !bytes.Equal(crl.RawIssuer, ca.RawSubject) {
		return false
	}
	return len(crl.AuthorityKeyId) == 0 || len(ca.SubjectKeyId) == 0 || bytes.Equal(crl.AuthorityKeyId, ca.SubjectKeyId)
}

// Admit names the caller of a request on a connection whose handshake
// verify let through, checking the CRL in force again and the chains'
// expiry by the gate's clock (check, on every verified chain): a refused caller is audited as admin_refused with op, and err says why
// (KindForbidden). ok is false when the connection has no verified
// client certificate (not through Listen).
func (g *Gate) Admit(ctx context.Context, cs *tls.ConnectionState, remote, op string) (by admin.Principal, ok bool, err error) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return admin.Principal{}, false, nil
	}
	cert := cs.PeerCertificates[0]
	if reason := g.check(cs.VerifiedChains, true); reason != "" {
		by = admin.Principal{Actor: admin.CertActor(cert)}
		g.logger().Warn("provisioning API: request refused", "actor", by.Actor, "remote", remote, "op", op, "reason", reason)
		if g.Refused != nil {
			g.Refused(context.WithoutCancel(ctx), by, op, reason, map[string]string{"remote": remote})
		}
		return by, true, &admin.Error{Kind: admin.KindForbidden, Message: "provisioning API: " + reason}
	}
	by = g.Principal(cert)
	for _, c := range cs.PeerCertificates {
		by.Certs = append(by.Certs, c.Raw)
	}
	return by, true, nil
}

// Principal names the caller with the verified client certificate cert.
func (g *Gate) Principal(cert *x509.Certificate) admin.Principal {
	return admin.CertPrincipal(cert, g.Roles.CertRoles(cert))
}

// RolesOf returns the roles that the client certificate chain certs
// (admin.Principal.Certs: the certificate first, then what the client
// sent with it) holds now, if the gate admits it now: it verifies
// against admin.api_client_ca by the gate's clock, for client
// authentication, as at a handshake, and passes the CRL in force and
// the expiry checks of every request (check). What a pending request's
// approval asks of its requester (admin.Config.RolesNow); the error says
// why the certificate is no longer admitted.
func (g *Gate) RolesOf(certs [][]byte) ([]admin.Role, error) {
	if len(certs) == 0 {
		return nil, errors.New("no client certificate was kept with the request")
	}
	parsed := make([]*x509.Certificate, len(certs))
	for i, der := range certs {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("the requester's client certificate cannot be read: %w", err)
		}
		parsed[i] = c
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range g.ClientCAs {
		roots.AddCert(c)
	}
	for _, c := range parsed[1:] {
		inter.AddCert(c)
	}
	chains, err := parsed[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: g.now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, fmt.Errorf("the requester's client certificate no longer verifies against admin.api_client_ca: %w", err)
	}
	if reason := g.check(chains, true); reason != "" {
		return nil, errors.New("the requester's client certificate is no longer admitted: " + reason)
	}
	return g.Roles.CertRoles(parsed[0]), nil
}

// refuse audits and logs a failed handshake of a client that sent a
// ClientHello: with the certificate it presented when there was one.
func (g *Gate) refuse(remote net.Addr, err error) {
	by := admin.Principal{Actor: "tls:" + remote.String()}
	reason := err.Error()
	var r *refusal
	var ve *tls.CertificateVerificationError
	switch {
	case errors.As(err, &r):
		by.Actor, reason = admin.CertActor(r.cert), r.reason
	case errors.As(err, &ve) && len(ve.UnverifiedCertificates) > 0:
		by.Actor = admin.CertActor(ve.UnverifiedCertificates[0])
		reason = "the client certificate does not verify against admin.api_client_ca: " + ve.Err.Error()
	}
	fields := map[string]string{"remote": remote.String()}
	g.logger().Warn("provisioning API: handshake refused", "actor", by.Actor, "remote", remote.String(), "reason", reason)
	if g.Refused != nil {
		g.Refused(context.Background(), by, handshakeOp, reason, fields)
	}
}

// Listen returns a listener that hands out only connections whose TLS
// handshake with conf succeeded: the handshake runs here, one goroutine
// a connection, so that a refusal is audited (refuse) and a slow client
// holds up nobody else. A connection closed or timed out before its
// ClientHello (a port probe) is dropped with a debug log line only.
func (g *Gate) Listen(inner net.Listener, conf *tls.Config) net.Listener {
	l := &listener{Listener: inner, gate: g, conf: conf, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.accept()
	return l
}

type listener struct {
	net.Listener
	gate  *Gate
	conf  *tls.Config
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error // the inner listener's error, set before done closes
}

func (l *listener) accept() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.once.Do(func() { l.err = err; close(l.done) })
			return
		}
		go l.handshake(c)
	}
}

func (l *listener) handshake(c net.Conn) {
	var hello atomic.Bool
	conf := l.conf.Clone()
	conf.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		hello.Store(true)
		return nil, nil
	}
	timeout := l.gate.HandshakeTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tc := tls.Server(c, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		if hello.Load() {
			l.gate.refuse(c.RemoteAddr(), err)
		} else {
			l.gate.logger().Debug("provisioning API: connection closed before its TLS handshake", "remote", c.RemoteAddr().String(), "err", err)
		}
		c.Close()
		return
	}
	select {
	case l.conns <- tc:
	case <-l.done:
		tc.Close()
	}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		if l.err != nil {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

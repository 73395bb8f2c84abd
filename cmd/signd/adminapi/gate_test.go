package adminapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
)

// crlOf fetches ca's CRL.
func crlOf(t *testing.T, ca *certstatustest.CA) *x509.RevocationList {
	t.Helper()
	res, err := http.Get(ca.URL + "/crl")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	der, _ := io.ReadAll(res.Body)
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		t.Fatal(err)
	}
	return crl
}

// Every caller the gate refuses is refused at the handshake, before any
// handler runs, and leaves one admin_refused entry naming its certificate
// when it sent one.
func TestGateRefusals(t *testing.T) {
	w := newWorld(t, map[string][]string{"administrator": {"CN=onboarding,O=Example", "CN=revoked,O=Example"}}, nil, nil)
	good := issue(t, w.ca, "onboarding", time.Time{}, time.Time{})
	revoked := issue(t, w.ca, "revoked", time.Time{}, time.Time{})
	w.ca.Revoke(revoked.cert.SerialNumber, 1)
	w.gate.CRL = crlOf(t, w.ca)
	rogueCA := certstatustest.New(t, "admin API CA", nil) // the same name, another key
	rogue := issue(t, rogueCA, "onboarding", time.Time{}, time.Time{})
	expired := issue(t, w.ca, "onboarding", time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	unmapped := issue(t, w.ca, "stranger", time.Time{}, time.Time{})

	tests := []struct {
		name       string
		cert       *clientCert
		maxVersion uint16
		actor      string // "" = the client's address
		reason     string
	}{
		{"no certificate", nil, 0, "", "client didn't provide a certificate"},
		{"another CA", &rogue, 0, admin.CertActor(rogue.cert), "does not verify against admin.api_client_ca: x509: certificate signed by unknown authority"},
		{"expired", &expired, 0, admin.CertActor(expired.cert), "does not verify against admin.api_client_ca: x509: certificate has expired or is not yet valid"},
		{"revoked", &revoked, 0, admin.CertActor(revoked.cert), "is revoked (admin.api_client_crl"},
		{"no role", &unmapped, 0, admin.CertActor(unmapped.cert), "holds no role: admin.api_roles names neither its subject nor its key"},
		{"TLS 1.1", &good, tls.VersionTLS11, "", "client offered only unsupported versions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.audit())
			res, err := w.client(tt.cert, tt.maxVersion).Get("https://" + w.addr + Prefix + "/users")
			if err == nil {
				res.Body.Close()
				t.Fatalf("GET /users answered %s", res.Status)
			}
			w.awaitRefusal(t)
			es := w.audit()[before:]
			if len(es) != 1 {
				t.Fatalf("%d audit entries, want one admin_refused: %+v", len(es), es)
			}
			e := es[0]
			if e.Kind != store.AuditAdminRefused || e.Outcome != store.AuditRefused || e.Fields["op"] != handshakeOp ||
				!strings.Contains(e.Reason, tt.reason) || !strings.HasPrefix(e.Fields["remote"], "127.0.0.1:") {
				t.Errorf("entry %+v, want admin_refused op %s, reason ...%s...", e, handshakeOp, tt.reason)
			}
			if want := tt.actor; want == "" && e.Actor != "tls:"+e.Fields["remote"] || want != "" && e.Actor != want {
				t.Errorf("actor %q, want %q", e.Actor, want)
			}
		})
	}
	// The good certificate passes the same gate.
	if st, out := w.call(&good, "GET", "/users", nil); st != http.StatusOK {
		t.Errorf("GET /users as %s: %d %v", good.cert.Subject, st, out)
	}
	// An outdated CRL stops everyone: revocations after it are unknown.
	w.gate.Now = func() time.Time { return w.gate.CRL.NextUpdate.Add(time.Minute) }
	if res, err := w.client(&good, 0).Get("https://" + w.addr + Prefix + "/users"); err == nil {
		res.Body.Close()
		t.Errorf("with an outdated CRL: %s", res.Status)
	} else if w.awaitRefusal(t); false {
	} else if es := w.audit(); !strings.Contains(es[len(es)-1].Reason, "the CRL admin.api_client_crl is out of date since") {
		t.Errorf("outdated CRL audited as %q", es[len(es)-1].Reason)
	}
}

// A port probe (a connection closed before its ClientHello) is no
// refusal worth an audit entry.
func TestGateProbeNotAudited(t *testing.T) {
	w := newWorld(t, map[string][]string{"auditor": {"CN=x,O=Example"}}, nil, nil)
	before := len(w.audit())
	c, err := (&net.Dialer{}).Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	// A full handshake after it shows the probe was handled first.
	good := issue(t, w.ca, "x", time.Time{}, time.Time{})
	if st, _ := w.call(&good, "GET", "/users", nil); st != http.StatusOK {
		t.Fatalf("GET /users: %d", st)
	}
	for _, e := range w.audit()[before:] {
		if e.Kind == store.AuditAdminRefused {
			t.Errorf("a probe audited: %+v", e)
		}
	}
}

// A kept-alive connection is no way around the CRL: a certificate
// revoked (SetCRL, as a SIGHUP reload does), a CRL gone out of date, or a
// certificate expired while its connection is open is refused at its next request on that
// same connection, in the one error shape, audited as admin_refused with
// the request's operation, and the connection closed; a new connection
// is refused at the handshake as before.
func TestGateRevocationOnOpenConnection(t *testing.T) {
	tests := []struct {
		name   string
		change func(w *world, c *clientCert)
		reason string
		// handshake is the reason of a new connection's refusal; "" =
		// reason.
		handshake string
	}{
		{"revoked", func(w *world, c *clientCert) {
			w.ca.Revoke(c.cert.SerialNumber, 1)
			w.gate.SetCRL(crlOf(t, w.ca))
		}, "the client certificate (serial %s) is revoked (admin.api_client_crl, since ", ""},
		{"CRL out of date", func(w *world, c *clientCert) {
			next := w.gate.CRL.NextUpdate
			w.gate.Now = func() time.Time { return next.Add(time.Minute) }
		}, "the CRL admin.api_client_crl is out of date since ", ""},
		{"certificate expired", func(w *world, c *clientCert) {
			w.gate.SetCRL(nil)
			after := c.cert.NotAfter
			w.gate.Now = func() time.Time { return after.Add(time.Minute) }
		}, "the certificate CN=onboarding,O=Example of the client's chain expired at ",
			"does not verify against admin.api_client_ca: x509: certificate has expired or is not yet valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, map[string][]string{"administrator": {"CN=onboarding,O=Example"}}, nil, nil)
			w.gate.CRL = crlOf(t, w.ca)
			good := issue(t, w.ca, "onboarding", time.Time{}, time.Time{})
			var dials atomic.Int32
			dialer := &net.Dialer{}
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: w.roots, Certificates: []tls.Certificate{good.tls}},
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return dialer.DialContext(ctx, network, addr)
				}}}
			get := func() (*http.Response, []byte, error) { return getUsers(c, w.addr) }
			if res, raw, err := get(); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("before: %v %v %s", res, err, raw)
			}
			before := len(w.audit())
			tt.change(w, &good)
			res, raw, err := get()
			if err != nil {
				t.Fatalf("on the open connection: %v", err)
			}
			reason := tt.reason
			if strings.Contains(reason, "%s") {
				reason = fmt.Sprintf(reason, good.cert.SerialNumber)
			}
			var ae admin.Error
			if res.StatusCode != http.StatusForbidden || json.Unmarshal(raw, &ae) != nil || ae.Kind != admin.KindForbidden ||
				!strings.HasPrefix(ae.Message, "provisioning API: "+reason) {
				t.Errorf("on the open connection: %d %s, want 403 forbidden ...%s...", res.StatusCode, raw, reason)
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("%d connections, want the first one kept alive", n)
			}
			if !res.Close {
				t.Error("the refused connection is kept open")
			}
			w.awaitRefusal(t)
			es := w.audit()[before:]
			if len(es) != 1 || es[0].Kind != store.AuditAdminRefused || es[0].Outcome != store.AuditRefused ||
				es[0].Fields["op"] != "ListUsers" || es[0].Actor != admin.CertActor(good.cert) || !strings.Contains(es[0].Reason, reason) ||
				!strings.HasPrefix(es[0].Fields["remote"], "127.0.0.1:") {
				t.Errorf("audited as %+v, want one admin_refused ListUsers of %s", es, admin.CertActor(good.cert))
			}
			// A new connection: refused at the handshake, as before.
			if res, _, err := get(); err == nil {
				t.Errorf("a new connection: %s, want the handshake refused", res.Status)
			}
			w.awaitRefusal(t)
			if tt.handshake != "" {
				reason = tt.handshake
			}
			if es := w.audit(); es[len(es)-1].Fields["op"] != handshakeOp || !strings.Contains(es[len(es)-1].Reason, reason) {
				t.Errorf("the new connection audited as %+v", es[len(es)-1])
			}
		})
	}
}

// A client certificate under an intermediate CA, with admin.api_client_ca
// the root and its CRL in force: the root's CRL revoking the intermediate
// refuses the chain, and a client certificate the CRL's issuer did not
// issue cannot be checked and is refused too, at the handshake (verify)
// and at the next request of a connection opened before the CRL (Admit).
// A certificate the root issues itself passes the same gate.
func TestGateChainThroughIntermediate(t *testing.T) {
	tests := []struct {
		name     string
		revoke   bool // the root's CRL revokes the intermediate
		onlyUser bool // the root's CRL is for end-entity certificates only
		reason   string
	}{
		{"intermediate revoked", true, false, "the certificate CN=client issuing CA,O=Test CA (serial %s) of the client's chain is revoked (admin.api_client_crl, since "},
		{"leaf of the intermediate", false, false, "the client certificate is issued by CN=client issuing CA,O=Test CA, not by CN=admin API CA,O=Test CA, the issuer of admin.api_client_crl: its revocation cannot be checked"},
		{"intermediate outside the CRL's scope", true, true, "the certificate CN=client issuing CA,O=Test CA of the client's chain cannot be checked against admin.api_client_crl: issuingDistributionPoint: the CRL covers only end-entity certificates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, map[string][]string{"administrator": {"CN=onboarding,O=Example"}}, nil, nil)
			inter := w.ca.Intermediate(t, "client issuing CA")
			c := issue(t, inter, "onboarding", time.Time{}, time.Time{})
			c.tls.Certificate = append(c.tls.Certificate, inter.Cert.Raw)
			// Before any CRL, one connection kept alive.
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: w.roots, Certificates: []tls.Certificate{c.tls}}}}
			get := func() (*http.Response, []byte, error) { return getUsers(client, w.addr) }
			if res, raw, err := get(); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("without a CRL: %v %v %s", res, err, raw)
			}
			if tt.revoke {
				w.ca.Revoke(inter.Cert.SerialNumber, 1)
			}
			if tt.onlyUser {
				w.ca.SetCRLExtensions(certstatustest.IDP{OnlyUser: true}.Extension())
			}
			w.gate.SetCRL(crlOf(t, w.ca))
			reason := tt.reason
			if strings.Contains(reason, "%s") {
				reason = fmt.Sprintf(reason, inter.Cert.SerialNumber)
			}
			res, raw, err := get()
			if err != nil {
				t.Fatalf("on the open connection: %v", err)
			}
			var ae admin.Error
			if res.StatusCode != http.StatusForbidden || json.Unmarshal(raw, &ae) != nil || !strings.HasPrefix(ae.Message, "provisioning API: "+reason) {
				t.Fatalf("on the open connection (Admit): %d %s, want 403 forbidden ...%s...", res.StatusCode, raw, reason)
			}
			w.awaitRefusal(t)
			if res, _, err := get(); err == nil {
				t.Fatalf("a new connection: %s, want the handshake refused", res.Status)
			}
			w.awaitRefusal(t)
			if es := w.audit(); es[len(es)-1].Fields["op"] != handshakeOp || !strings.Contains(es[len(es)-1].Reason, reason) {
				t.Errorf("the handshake (verify) audited as %+v, want ...%s...", es[len(es)-1], reason)
			}
			// The root's own client certificate is checked and passes.
			direct := issue(t, w.ca, "onboarding", time.Time{}, time.Time{})
			if st, out := w.call(&direct, "GET", "/users", nil); st != http.StatusOK {
				t.Errorf("a client certificate of the root: %d %v", st, out)
			}
		})
	}
}

// getUsers asks GET /users of the API at addr through c, keeping c's
// connection for the next request.
func getUsers(c *http.Client, addr string) (*http.Response, []byte, error) {
	res, err := c.Get("https://" + addr + Prefix + "/users")
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res, raw, nil
}

// TestGateCrossSignedChains: with a cross-signed issuing CA (its
// certificate from root A and from root B, both in admin.api_client_ca),
// or one that rolled its key over (the new key certified by the old one,
// RFC 4210 §4.4), a client certificate verifies through two chains, which
// the TLS stack hands over in an order of its own. The gate decides the
// same on either order: the CRL listing a certificate of any chain
// refuses it, whatever chain another check would pick; otherwise one
// chain whose every check passes admits it: the handshake and each
// request (Admit) alike.
func TestGateCrossSignedChains(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	rootA, rootB := certstatustest.New(t, "root A", nil), certstatustest.New(t, "root B", nil)
	inter := rootA.Intermediate(t, "issuing CA")
	inter.SetNextUpdate(72 * time.Hour)
	leaf := issue(t, inter, "onboarding", time.Time{}, time.Time{})
	revokedLeaf := issue(t, inter, "onboarding", time.Time{}, time.Time{})
	inter.Revoke(revokedLeaf.cert.SerialNumber, 1)
	// The cross-certificates: one under another subject key identifier
	// (an issuer of another method, RFC 5280 §4.2.1.2), against which the
	// CRL's authority key identifier does not check; one that expires an
	// hour from now, before the rest.
	otherKeyID := inter.CrossSign(t, rootB, time.Time{}, time.Time{}, []byte{1, 2, 3, 4})
	expiring := inter.CrossSign(t, rootB, now.Add(-time.Hour), now.Add(time.Hour), nil)
	// The key rollover: the issuing CA's old key (its certificate from
	// root A) certified the new one (newWithOld, a serial after two spare
	// certificates of the old key's, so that no certificate of the new
	// key's has it); the CA's CRL revokes that link, and carries no
	// authority key identifier, so that it counts for what either key
	// issued.
	old := rootA.Intermediate(t, "issuing CA")
	issue(t, old, "spare", time.Time{}, time.Time{})
	issue(t, old, "spare", time.Time{}, time.Time{})
	newWithOld := inter.CrossSign(t, old, time.Time{}, time.Time{}, nil)
	if newWithOld.SerialNumber.Cmp(revokedLeaf.cert.SerialNumber) <= 0 {
		t.Fatalf("newWithOld's serial %s is one of the new key's", newWithOld.SerialNumber)
	}
	crl := crlOf(t, inter)
	inter.Revoke(newWithOld.SerialNumber, 1)
	linkRevoked := crlOf(t, inter)
	linkRevoked.AuthorityKeyId = nil

	// chains verifies cert through inter's own certificate and the
	// intermediates more: two chains, the shorter one, or root A's,
	// first.
	chains := func(cert *x509.Certificate, more ...*x509.Certificate) [][]*x509.Certificate {
		t.Helper()
		roots, inters := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(rootA.Cert)
		roots.AddCert(rootB.Cert)
		inters.AddCert(inter.Cert)
		for _, c := range more {
			inters.AddCert(c)
		}
		got, err := cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if err != nil || len(got) != 2 {
			t.Fatalf("verify: %d chains, %v; want 2", len(got), err)
		}
		if len(got[0]) > len(got[1]) || len(got[0]) == len(got[1]) && got[0][len(got[0])-1].Equal(rootB.Cert) {
			got[0], got[1] = got[1], got[0]
		}
		return got
	}
	roles, err := admin.CertRoleMap(map[string][]string{"administrator": {"CN=onboarding,O=Example"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cert   clientCert
		more   []*x509.Certificate // intermediates besides inter's certificate
		crl    *x509.RevocationList
		at     time.Time // the gate's clock at the request
		reason string    // "" = admitted; the handshake's at now
	}{
		{"one chain checks the certificate against the CRL, the other cannot", leaf, []*x509.Certificate{otherKeyID}, crl, now, ""},
		{"the certificate on the CRL, on the chain that checks it", revokedLeaf, []*x509.Certificate{otherKeyID}, crl, now,
			fmt.Sprintf("the client certificate (serial %s) is revoked (admin.api_client_crl", revokedLeaf.cert.SerialNumber)},
		{"one chain's link on the CRL, the other chain passes", leaf, []*x509.Certificate{old.Cert, newWithOld}, linkRevoked, now,
			fmt.Sprintf("the certificate CN=issuing CA,O=Test CA (serial %s) of the client's chain is revoked", newWithOld.SerialNumber)},
		{"one chain's cross-certificate expired since the handshake", leaf, []*x509.Certificate{expiring}, nil, now.Add(2 * time.Hour), ""},
		{"every chain expired since the handshake", leaf, []*x509.Certificate{expiring}, nil, now.Add(30 * time.Hour), "of the client's chain expired at"},
	}
	for _, tt := range tests {
		both := chains(tt.cert.cert, tt.more...)
		for _, order := range []string{"first", "second"} {
			t.Run(tt.name+", the other chain "+order, func(t *testing.T) {
				cs := tls.ConnectionState{PeerCertificates: []*x509.Certificate{tt.cert.cert}, VerifiedChains: both}
				if order == "first" {
					cs.VerifiedChains = [][]*x509.Certificate{both[1], both[0]}
				}
				clock := now
				g := &Gate{ClientCAs: []*x509.Certificate{rootA.Cert, rootB.Cert}, CRL: tt.crl, Roles: roles, Now: func() time.Time { return clock }}
				err := g.verify(cs)
				switch handshake := tt.at.Equal(now); {
				case handshake && tt.reason == "" && err != nil:
					t.Fatalf("handshake refused: %v", err)
				case handshake && tt.reason != "" && (err == nil || !strings.Contains(err.Error(), tt.reason)):
					t.Fatalf("handshake: %v, want …%s…", err, tt.reason)
				case !handshake && err != nil:
					t.Fatalf("handshake refused: %v", err)
				}
				clock = tt.at
				_, ok, err := g.Admit(context.Background(), &cs, "127.0.0.1:1", "ListUsers")
				switch {
				case !ok:
					t.Fatal("Admit: no verified certificate")
				case tt.reason == "" && err != nil:
					t.Fatalf("request refused: %v", err)
				case tt.reason != "" && (err == nil || !strings.Contains(err.Error(), tt.reason)):
					t.Fatalf("request: %v, want …%s…", err, tt.reason)
				}
			})
		}
	}
}

// TestGateRolesOf: the roles a pending request's requester holds at its
// approval are what the gate grants their kept certificate chain now: a
// subject taken out of admin.api_roles since holds nothing, and a
// certificate the gate no longer admits (expired, of another CA, not a
// certificate) gets an error saying why.
func TestGateRolesOf(t *testing.T) {
	ca := certstatustest.New(t, "admin API CA", nil)
	other := certstatustest.New(t, "another CA", nil)
	one := ca.ClientCert(t, "one", time.Time{}, time.Time{})
	stranger := other.ClientCert(t, "one", time.Time{}, time.Time{})
	granted, err := admin.CertRoleMap(map[string][]string{"administrator": {"CN=one,O=Example"}})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := admin.CertRoleMap(map[string][]string{"administrator": {"CN=two,O=Example"}})
	if err != nil {
		t.Fatal(err)
	}
	expired := func() time.Time { return one.Leaf.NotAfter.Add(time.Minute) }
	tests := []struct {
		name  string
		roles admin.RoleMap
		now   func() time.Time
		certs [][]byte
		want  []admin.Role
		err   string
	}{
		{"admitted", granted, nil, one.Certificate, []admin.Role{admin.RoleAdministrator}, ""},
		{"subject taken out of admin.api_roles", removed, nil, one.Certificate, nil, ""},
		{"expired", granted, expired, one.Certificate, nil,
			"the requester's client certificate no longer verifies against admin.api_client_ca: x509: certificate has expired or is not yet valid"},
		{"another CA", granted, nil, stranger.Certificate, nil,
			"the requester's client certificate no longer verifies against admin.api_client_ca: x509: certificate signed by unknown authority"},
		{"not a certificate", granted, nil, [][]byte{[]byte("garbage")}, nil, "the requester's client certificate cannot be read: x509: malformed certificate"},
		{"none kept", granted, nil, nil, nil, "no client certificate was kept with the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Gate{ClientCAs: []*x509.Certificate{ca.Cert}, Roles: tt.roles, Now: tt.now}
			got, err := g.RolesOf(tt.certs)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)) {
				t.Fatalf("RolesOf = %v, want error %q", err, tt.err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("RolesOf = %v, want %v", got, tt.want)
			}
		})
	}
}

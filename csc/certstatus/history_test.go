package certstatus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// underIntermediate starts an intermediate CA under f.ca (which names the
// root's CRL) and issues a leaf under it that names its OCSP responder.
func (f *fixture) underIntermediate(t *testing.T) (*certstatustest.CA, *x509.Certificate) {
	t.Helper()
	sub := f.ca.Intermediate(t, "Intermediate")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return sub, sub.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Signer"}, OCSP: true})
}

// TestHistoryKeptWhileAnotherLinkFails: what was taken about a
// certificate lasts as long as a listed chain holds it, even through
// refreshes in which another link of the chain gets no answer: an
// intermediate's revocation stays final when the leaf's responder was
// down in between.
func TestHistoryKeptWhileAnotherLinkFails(t *testing.T) {
	f := newFixture(t)
	sub, leaf := f.underIntermediate(t)
	inter := sub.Cert
	chain := [][]byte{leaf.Raw, inter.Raw, f.ca.Cert.Raw}
	f.ca.Revoke(inter.SerialNumber, ocsp.CACompromise)
	f.refresh(chain)
	f.wantStatus(t, "intermediate revoked", chain, certstatus.Revoked, true)
	sub.SetDown(true, false) // the leaf's responder: no answer for the chain
	f.refresh(chain)
	f.clk.Add(10 * time.Minute)
	sub.SetDown(false, false)
	f.ca.Unrevoke(inter.SerialNumber) // a newer CRL without it
	f.refresh(chain)
	f.wantStatus(t, "after the outage and a CRL without the intermediate", chain, certstatus.Revoked, true)
}

// TestRevocationSurvivesAnotherLinkFailing: a revocation or hold that one
// link of a chain answers decides the chain's status even when another
// link of it gets no answer in the same refresh; the chain's last good
// answer (valid, and still current) is not kept in its place. Both orders:
// the leaf revoked while the intermediate's sources are down, and the
// intermediate revoked while the leaf's responder is down.
func TestRevocationSurvivesAnotherLinkFailing(t *testing.T) {
	type setup struct {
		f           *fixture
		sub         *certstatustest.CA
		leaf, inter *x509.Certificate
	}
	tests := []struct {
		name string
		// revoke revokes one link with reason; down takes the other
		// link's sources down.
		revoke func(s setup, reason int)
		down   func(s setup)
		reason int
		want   certstatus.Status
	}{
		{name: "leaf revoked, intermediate's CRL down", reason: ocsp.KeyCompromise, want: certstatus.Revoked,
			revoke: func(s setup, r int) { s.sub.Revoke(s.leaf.SerialNumber, r) },
			down:   func(s setup) { s.f.ca.SetDown(true, true) }},
		{name: "leaf on hold, intermediate's CRL down", reason: ocsp.CertificateHold, want: certstatus.Suspended,
			revoke: func(s setup, r int) { s.sub.Revoke(s.leaf.SerialNumber, r) },
			down:   func(s setup) { s.f.ca.SetDown(true, true) }},
		{name: "intermediate revoked, leaf's responder down", reason: ocsp.CACompromise, want: certstatus.Revoked,
			revoke: func(s setup, r int) { s.f.ca.Revoke(s.inter.SerialNumber, r) },
			down:   func(s setup) { s.sub.SetDown(true, true) }},
		{name: "intermediate on hold, leaf's responder down", reason: ocsp.CertificateHold, want: certstatus.Suspended,
			revoke: func(s setup, r int) { s.f.ca.Revoke(s.inter.SerialNumber, r) },
			down:   func(s setup) { s.sub.SetDown(true, true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			sub, leaf := f.underIntermediate(t)
			s := setup{f: f, sub: sub, leaf: leaf, inter: sub.Cert}
			chain := [][]byte{leaf.Raw, sub.Cert.Raw, f.ca.Cert.Raw}
			f.refresh(chain)
			f.wantStatus(t, "before", chain, certstatus.Valid, true)
			tt.revoke(s, tt.reason)
			tt.down(s)
			f.refresh(chain)
			if st, _ := f.checker.Status(chain); st != tt.want {
				t.Fatalf("one link %s, the other without an answer: Status = %s; want %s", tt.want, st, tt.want)
			}
			// Still so at the next refresh, the other link still down.
			f.clk.Add(10 * time.Minute)
			f.refresh(chain)
			if st, _ := f.checker.Status(chain); st != tt.want {
				t.Fatalf("next refresh: Status = %s; want %s", st, tt.want)
			}
		})
	}
}

// TestRevocationInHistoryDecidesAFailedChain: a chain whose check gets no
// answer, one of whose certificates the history holds revoked (taken
// through another chain that holds it), is revoked, not merely without a
// current answer.
func TestRevocationInHistoryDecidesAFailedChain(t *testing.T) {
	f := newFixture(t)
	sub, leaf := f.underIntermediate(t)
	full := [][]byte{leaf.Raw, sub.Cert.Raw, f.ca.Cert.Raw}
	short := [][]byte{leaf.Raw, sub.Cert.Raw} // ends at the intermediate
	f.refresh(full, short)
	sub.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
	f.refresh(full) // the leaf's revocation taken; short not listed
	sub.SetDown(true, true)
	f.refresh(full, short)
	for name, chain := range map[string][][]byte{"full": full, "short": short} {
		if s, _ := f.checker.Status(chain); s != certstatus.Revoked {
			t.Errorf("%s chain: Status = %s; want revoked", name, s)
		}
	}
}

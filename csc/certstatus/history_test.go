package certstatus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// TestHistoryKeptWhileAnotherLinkFails: what was taken about a
// certificate lasts as long as a listed chain holds it, even through
// refreshes in which another link of the chain gets no answer: an
// intermediate's revocation stays final when the leaf's responder was
// down in between.
func TestHistoryKeptWhileAnotherLinkFails(t *testing.T) {
	f := newFixture(t)
	sub := f.ca.Intermediate(t, "Intermediate")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := sub.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Signer"}, OCSP: true})
	inter := sub.Cert
	chain := [][]byte{leaf.Raw, inter.Raw, f.ca.Cert.Raw}
	f.ca.Revoke(inter.SerialNumber, ocsp.CACompromise)
	f.refresh(chain)
	if s, cur := f.checker.Status(chain); s != certstatus.Revoked || !cur {
		t.Fatalf("intermediate revoked: %s, %v", s, cur)
	}
	sub.SetDown(true, false) // the leaf's responder: no answer for the chain
	f.refresh(chain)
	f.clk.Add(10 * time.Minute)
	sub.SetDown(false, false)
	f.ca.Unrevoke(inter.SerialNumber) // a newer CRL without it
	f.refresh(chain)
	if s, cur := f.checker.Status(chain); s != certstatus.Revoked || !cur {
		t.Fatalf("after the outage and a CRL without the intermediate: %s, %v; want revoked, current", s, cur)
	}
}

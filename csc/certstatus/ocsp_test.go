package certstatus_test

import (
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// TestOCSPFreshness: a response without nextUpdate is current for
// Config.OCSPMaxAge (an hour by default) after its thisUpdate (RFC 6960
// §4.2.2.1); a thisUpdate more than five minutes ahead of the clock is
// refused.
func TestOCSPFreshness(t *testing.T) {
	tests := []struct {
		name   string
		age    time.Duration // of thisUpdate; negative: in the future
		noNext bool
		want   bool // current after the refresh
		// currentFor, when set, is how long the answer stays current
		// without another refresh.
		currentFor time.Duration
	}{
		// Two refresh intervals (the fixture refreshes every 10 minutes),
		// or the max age from thisUpdate, whichever ends first.
		{name: "no nextUpdate, thisUpdate a minute ago", age: time.Minute, noNext: true, want: true, currentFor: 20 * time.Minute},
		{name: "no nextUpdate, thisUpdate 59 minutes ago", age: 59 * time.Minute, noNext: true, want: true, currentFor: time.Minute},
		{name: "no nextUpdate, thisUpdate an hour ago", age: time.Hour, noNext: true},
		{name: "no nextUpdate, thisUpdate 48 hours ago", age: 48 * time.Hour, noNext: true},
		{name: "nextUpdate ahead, thisUpdate 48 hours ago", age: 48 * time.Hour, want: true},
		{name: "thisUpdate 4 minutes ahead", age: -4 * time.Minute, want: true},
		{name: "thisUpdate 10 minutes ahead", age: -10 * time.Minute},
		{name: "no nextUpdate, thisUpdate 10 minutes ahead", age: -10 * time.Minute, noNext: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			_, chain := f.leaf(t, true, false)
			f.ca.SetThisUpdate(tt.age)
			f.ca.OmitNextUpdate(tt.noNext)
			f.refresh(chain)
			if s, cur := f.checker.Status(chain); s != certstatus.Valid || cur != tt.want {
				t.Fatalf("Status = %s, current %v; want valid, current %v", s, cur, tt.want)
			}
			if tt.currentFor == 0 {
				return
			}
			f.clk.Add(tt.currentFor - time.Second)
			if _, cur := f.checker.Status(chain); !cur {
				t.Fatalf("not current %s later", tt.currentFor-time.Second)
			}
			f.clk.Add(time.Second)
			if _, cur := f.checker.Status(chain); cur {
				t.Fatalf("still current %s later, past thisUpdate + max age", tt.currentFor)
			}
		})
	}
	t.Run("max age from the config", func(t *testing.T) {
		f, chain := oldAnswer(t, 5*time.Minute, 6*time.Minute)
		if _, cur := f.checker.Status(chain); cur {
			t.Fatal("a response 6 minutes old is current with a 5-minute max age")
		}
		f.ca.SetThisUpdate(4 * time.Minute)
		f.refresh(chain)
		if _, cur := f.checker.Status(chain); !cur {
			t.Fatal("a response 4 minutes old is not current with a 5-minute max age")
		}
	})
}

// TestOCSPReplay: answers a network attacker could serve after the
// certificate was revoked or put on hold — an old "good" response without
// nextUpdate, an older "good" one than the "revoked" one taken, a newer
// "good" one after a revocation (a revocation is final), an older one
// after a hold, an old CRL while the responder is down — never make the
// certificate valid again. A newer answer lifts a hold.
func TestOCSPReplay(t *testing.T) {
	tests := []struct {
		name      string
		crl       bool
		reason    int
		replay    func(ca *certstatustest.CA)
		want      certstatus.Status
		wantValid bool // a newer "good" answer, later, makes it valid
	}{
		{name: "good from 48 hours ago without nextUpdate, after a revocation", reason: ocsp.KeyCompromise,
			replay: func(ca *certstatustest.CA) { ca.SetThisUpdate(48 * time.Hour); ca.OmitNextUpdate(true) },
			want:   certstatus.Revoked},
		{name: "good from 10 minutes ago, after a newer revoked", reason: ocsp.KeyCompromise,
			replay: func(ca *certstatustest.CA) { ca.SetThisUpdate(10 * time.Minute) },
			want:   certstatus.Revoked},
		{name: "newer good, after a revoked", reason: ocsp.Superseded,
			replay: func(*certstatustest.CA) {},
			want:   certstatus.Revoked},
		{name: "good from 10 minutes ago, after a newer hold", reason: ocsp.CertificateHold,
			replay: func(ca *certstatustest.CA) { ca.SetThisUpdate(10 * time.Minute) },
			want:   certstatus.Suspended, wantValid: true},
		{name: "responder down, a CRL older than the hold", crl: true, reason: ocsp.CertificateHold,
			replay: func(ca *certstatustest.CA) { ca.SetDown(true, false); ca.SetThisUpdate(10 * time.Minute) },
			want:   certstatus.Suspended, wantValid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			leaf, chain := f.leaf(t, true, tt.crl)
			f.ca.Revoke(leaf.SerialNumber, tt.reason)
			f.refresh(chain)
			f.wantStatus(t, "first answer", chain, tt.want, true)
			f.clk.Add(5 * time.Minute)
			f.ca.Unrevoke(leaf.SerialNumber)
			tt.replay(f.ca)
			f.refresh(chain)
			f.wantStatus(t, "after the replay", chain, tt.want, true)
			// The responder (back) up with a fresh answer.
			f.clk.Add(time.Minute)
			f.ca.SetDown(false, false)
			f.ca.SetThisUpdate(time.Second)
			f.ca.OmitNextUpdate(false)
			f.refresh(chain)
			want := tt.want
			if tt.wantValid {
				want = certstatus.Valid
			}
			f.wantStatus(t, "fresh answer", chain, want, true)
		})
	}
}

// TestOCSPOlderAnswerRefused: per certificate, thisUpdate only moves
// forward. An older "good" response that is still before its own (later)
// nextUpdate does not stretch the last answer past its nextUpdate, and an
// older hold does not come back once a newer answer lifted it.
func TestOCSPOlderAnswerRefused(t *testing.T) {
	t.Run("older good with a later nextUpdate", func(t *testing.T) {
		f := newFixture(t)
		_, chain := f.leaf(t, true, false)
		f.refresh(chain) // thisUpdate a minute ago, nextUpdate in an hour
		f.clk.Add(10 * time.Minute)
		f.ca.SetThisUpdate(20 * time.Minute) // before the first answer
		f.ca.SetNextUpdate(7 * 24 * time.Hour)
		f.refresh(chain)
		f.clk.Add(50 * time.Minute) // past the first answer's nextUpdate
		if s, cur := f.checker.Status(chain); cur {
			t.Fatalf("Status = %s, current; want not current: the older answer was taken", s)
		}
	})
	t.Run("older hold after a newer good", func(t *testing.T) {
		f := newFixture(t)
		leaf, chain := f.leaf(t, true, false)
		f.ca.Revoke(leaf.SerialNumber, ocsp.CertificateHold)
		f.refresh(chain)
		f.clk.Add(10 * time.Minute)
		f.ca.Unrevoke(leaf.SerialNumber)
		f.refresh(chain)
		f.wantStatus(t, "hold lifted", chain, certstatus.Valid, true)
		f.clk.Add(time.Minute)
		f.ca.Revoke(leaf.SerialNumber, ocsp.CertificateHold)
		f.ca.SetThisUpdate(8 * time.Minute) // the hold, replayed
		f.refresh(chain)
		f.wantStatus(t, "older hold", chain, certstatus.Valid, true)
	})
}

// oldAnswer is a checker whose OCSP answers without nextUpdate are current
// for maxAge, holding one such answer, age old, for a leaf's chain.
func oldAnswer(t *testing.T, maxAge, age time.Duration) (*fixture, [][]byte) {
	f := newFixture(t)
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, AllowLoopback: true, OCSPMaxAge: maxAge})
	_, chain := f.leaf(t, true, false)
	f.ca.OmitNextUpdate(true)
	f.ca.SetThisUpdate(age)
	f.refresh(chain)
	return f, chain
}

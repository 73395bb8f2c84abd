package metrics

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// unhealthyMemory is a memory store whose Health the test sets.
type unhealthyMemory struct {
	*memory.DB
	err error
}

func (h *unhealthyMemory) Health() error { return h.err }

// gathered is every sample of reg by series, `name{label="v",...}` with
// the labels sorted by name, as the text format writes them.
func gathered(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			series := mf.GetName()
			if len(labels) > 0 {
				series += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[series] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[series] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// certExpiring is a self-signed certificate valid until notAfter.
func certExpiring(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: notAfter.Add(-400 * 24 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestStateCollectorExpiryBuckets: enabled credentials are counted by the
// days their certificate has left, cumulatively (within_days="0" the expired, an
// expiry exactly at a bound inside it), disabled and pending ones not;
// the soonest expiry is in seconds; the audit log's length, and the
// store's writability as its health says.
func TestStateCollectorExpiryBuckets(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	db := &unhealthyMemory{DB: memory.New(memory.Options{})}
	ctx := context.Background()
	err := db.Update(ctx, func(tx store.Tx) error {
		if err := tx.CreateUser(&store.User{ID: "u1", Username: "alice", Status: store.UserActive}); err != nil {
			return err
		}
		for i, c := range []struct {
			status store.CredentialStatus
			left   time.Duration
		}{
			{store.CredentialEnabled, -time.Hour}, // expired
			{store.CredentialEnabled, 7 * day},    // exactly at within_days="7"
			{store.CredentialEnabled, 10 * day},   // within_days="14"
			{store.CredentialEnabled, 100 * day},  // +Inf only
			{store.CredentialDisabled, 2 * day},   // not counted
			{store.CredentialPending, 0},          // no certificate
		} {
			cred := &store.Credential{ID: "c" + string(rune('a'+i)), Owner: "alice", KeyID: []byte{byte(i + 1)}, Label: "l",
				Algorithm: store.AlgECP256, KeyBits: 256, Status: store.CredentialPending}
			if err := tx.CreateCredential(cred); err != nil {
				return err
			}
			if c.status != store.CredentialPending {
				cred.Status, cred.Chain = c.status, [][]byte{certExpiring(t, now.Add(c.left))}
				if c.status == store.CredentialDisabled {
					cred.DisabledBy = store.DisabledByAdmin
				}
				if err := tx.PutCredential(cred); err != nil {
					return err
				}
			}
		}
		return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, Outcome: store.AuditGranted})
	})
	if err != nil {
		t.Fatal(err)
	}
	s := NewState(StateOptions{Store: db, Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	if got := gathered(t, reg); len(got) != 1 || got["signd_store_writable"] != 1 {
		t.Errorf("before the first refresh: %v, want only signd_store_writable 1", got)
	}
	if err := s.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"signd_audit_entries_total":                                  1,
		"signd_credential_certificate_soonest_expiry_seconds":        -3600,
		`signd_credential_certificates_expiring{within_days="0"}`:    1,
		`signd_credential_certificates_expiring{within_days="1"}`:    1,
		`signd_credential_certificates_expiring{within_days="7"}`:    2,
		`signd_credential_certificates_expiring{within_days="14"}`:   3,
		`signd_credential_certificates_expiring{within_days="30"}`:   3,
		`signd_credential_certificates_expiring{within_days="90"}`:   3,
		`signd_credential_certificates_expiring{within_days="+Inf"}`: 4,
		"signd_store_writable":                                       1,
	}
	got := gathered(t, reg)
	for s, v := range want {
		if g, ok := got[s]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", s, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	db.err = errors.New("store: write failed")
	if got := gathered(t, reg)["signd_store_writable"]; got != 0 {
		t.Errorf("signd_store_writable = %v after a failed write, want 0", got)
	}
}

// TestReadinessChanges: signd_readiness_changes_total counts the verdicts
// that differ from the one before; the first is no change.
func TestReadinessChanges(t *testing.T) {
	m := New(Build{})
	for i, tc := range []struct {
		ready bool
		want  float64
	}{{true, 0}, {true, 0}, {false, 1}, {false, 1}, {true, 2}, {false, 3}} {
		m.ObserveReadiness(tc.ready)
		if got := gathered(t, m.reg)["signd_readiness_changes_total"]; got != tc.want {
			t.Errorf("verdict %d (%v): %v changes, want %v", i, tc.ready, got, tc.want)
		}
	}
}

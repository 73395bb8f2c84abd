package kv

import (
	"encoding/json"
	"testing"

	"github.com/signd/signd/store"
)

// A credential record written before DisabledBy existed (no disabled_by
// member) reads as disabled by an admin ("") and is valid; one written now
// keeps the owner.
func TestCredentialRecordDisabledBy(t *testing.T) {
	old := `{"id":"c1","owner":"alice","key_id":"AQID","label":"l","algorithm":"rsa-2048","key_bits":2048,` +
		`"chain":["MAMCAQE="],"status":"disabled","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`
	var r credentialRecord
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	c := r.credential()
	if c.Status != store.CredentialDisabled || c.DisabledBy != "" {
		t.Fatalf("old record: %s by %q", c.Status, c.DisabledBy)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("old record: %v", err)
	}
	c.DisabledBy = store.DisabledByOwner
	raw, err := json.Marshal(credentialToRecord(c))
	if err != nil {
		t.Fatal(err)
	}
	var back credentialRecord
	if err := json.Unmarshal(raw, &back); err != nil || back.credential().DisabledBy != store.DisabledByOwner {
		t.Fatalf("round trip: %s, %v", raw, err)
	}
}

// A client record written before id_token_signed_response_alg existed
// reads as the provider's default (""), and is valid; one written with the
// member keeps it.
func TestClientRecordIDTokenAlg(t *testing.T) {
	old := `{"id":"rp","name":"RP","secret_hash":"` + store.HashSecret("s") + `","redirect_uris":["https://rp.example/cb"],` +
		`"scopes":["openid"],"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`
	var r clientRecord
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	c := r.client()
	if c.IDTokenSignedResponseAlg != "" {
		t.Fatalf("old record: ID-token alg %q", c.IDTokenSignedResponseAlg)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("old record: %v", err)
	}
	c.IDTokenSignedResponseAlg = store.JWSES256
	raw, err := json.Marshal(clientToRecord(c))
	if err != nil {
		t.Fatal(err)
	}
	var back clientRecord
	if err := json.Unmarshal(raw, &back); err != nil || back.client().IDTokenSignedResponseAlg != store.JWSES256 {
		t.Fatalf("round trip: %s, %v", raw, err)
	}
}

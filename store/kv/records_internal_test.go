package kv

import (
	"encoding/json"
	"testing"

	"github.com/signd/signd/store"
)

// A credential record as written before multisign and authMode existed
// reads as multisign 1 and oauth2code; a record with them keeps them.
func TestCredentialRecordModes(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		n          int
		mode       store.AuthMode
	}{
		{"old record", `{"id":"c","owner":"alice","key_id":"a2V5","algorithm":"rsa-2048","key_bits":2048,"status":"pending"}`, 1, store.AuthOAuth2Code},
		{"new record", `{"id":"c","owner":"alice","key_id":"a2V5","algorithm":"rsa-2048","key_bits":2048,"status":"pending","multisign":10,"auth_mode":"explicit"}`, 10, store.AuthExplicit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r credentialRecord
			if err := json.Unmarshal([]byte(tc.json), &r); err != nil {
				t.Fatal(err)
			}
			c := r.credential()
			if c.Multisign != tc.n || c.AuthMode != tc.mode {
				t.Fatalf("multisign %d, authMode %q; want %d, %q", c.Multisign, c.AuthMode, tc.n, tc.mode)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

package oidc_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest"
)

// TestTokenEndpointHSMOutage: while the HSM cannot sign the ID token the
// token endpoint answers 503 temporarily_unavailable with Retry-After
// (never 500). Once the outage is known, a code is refused before it is
// redeemed, so the same code works after the HSM is back.
func TestTokenEndpointHSMOutage(t *testing.T) {
	ev := newFlowEnv(t)
	var faults *hsmtest.Faults
	faulty, err := hsm.Open(hsm.Config{
		Module: softTok.Module, TokenLabel: softTok.Label, PIN: softTok.PIN,
		Wrap: func(c hsm.Ctx) hsm.Ctx { faults = hsmtest.Wrap(c); return faults },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { faulty.Close() })
	ev.keys.HSM = faulty
	if tr := ev.redeem("rp", ev.code("rp", "openid")); tr.Status != http.StatusOK || tr.Body["id_token"] == nil {
		t.Fatalf("before the outage: %d %v", tr.Status, tr.Body)
	}

	want503 := func(what string, tr *tokenResponse) {
		t.Helper()
		if tr.Status != http.StatusServiceUnavailable || tr.Body["error"] != "temporarily_unavailable" ||
			tr.Body["error_description"] != "The ID token signer is temporarily unavailable, try again later" {
			t.Errorf("%s: %d %v", what, tr.Status, tr.Body)
		}
		if tr.Header.Get("Retry-After") != "5" || tr.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", what, tr.Header)
		}
	}
	faults.SetGone(true)
	// The first redemption finds the outage while signing: its code is
	// spent, its access token revoked.
	want503("redeem as the HSM fails", ev.redeem("rp", ev.code("rp", "openid")))
	if faulty.Available() {
		t.Fatal("the ID-token signer's failure did not mark the token unavailable")
	}
	// From now on codes are refused before they are redeemed.
	kept := ev.code("rp", "openid")
	want503("redeem during the outage", ev.redeem("rp", kept))

	faults.SetGone(false)
	deadline := time.Now().Add(5 * time.Second)
	for !faulty.Available() {
		if time.Now().After(deadline) {
			t.Fatal("token not back within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tr := ev.redeem("rp", kept)
	if tr.Status != http.StatusOK || tr.Body["id_token"] == nil {
		t.Fatalf("the code presented during the outage, after it: %d %v", tr.Status, tr.Body)
	}
	ev.idToken(tr, "rp") // verifies against the JWKS
}

package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"
)

// TestPINResetWhileAuthorizingJourney: with the real daemon, SoftHSM2 key
// and bbolt file, credentials/authorize with alice's PIN is held while the
// PIN is hashed (app.checkHook) and `signd user set-pin` commits through
// the admin socket meanwhile: the old PIN gets no SAD (the answer of a
// wrong PIN; a SAD issued on it would not sign), and the new PIN then
// authorizes a signature that verifies.
func TestPINResetWhileAuthorizingJourney(t *testing.T) {
	const newPIN = "735142"
	e := newEnv(t, "")
	journeyAlice(t, e)
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	addr, stop := e.startDaemonWith(func(a *app) {
		a.checkHook = func() {
			if armed.CompareAndSwap(true, false) {
				close(held)
				select {
				case <-release:
				case <-time.After(30 * time.Second): // never hang the daemon
				}
			}
		}
	})
	defer stop()
	base := "http://" + addr
	cred := enrollKey(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL", "--auth-mode", "explicit")
	bearer := serviceToken(t, base)
	call := func(method string, body map[string]any) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		return postJSON(t, base+"/csc/v1/"+method, bearer, string(b))
	}
	d := sha256.Sum256([]byte("%PDF-1.7 signed attributes, PIN reset"))
	hash := []string{base64.StdEncoding.EncodeToString(d[:])}
	authorize := func(pin string) (int, map[string]any) {
		return call("credentials/authorize", map[string]any{"credentialID": cred, "numSignatures": 1, "hash": hash, "PIN": pin})
	}

	type answer struct {
		status int
		res    map[string]any
		err    error
	}
	armed.Store(true)
	done := make(chan answer, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"credentialID": cred, "numSignatures": 1, "hash": hash, "PIN": journeyPIN})
		status, res, err := postJSONErr(base+"/csc/v1/credentials/authorize", bearer, string(b))
		done <- answer{status, res, err}
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the PIN check never started")
	}
	e.must(newPIN+"\n", "user", "set-pin", "alice", "--pin-file", "-")
	close(release)
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	signHash := func(sad string) (int, map[string]any) {
		return call("signatures/signHash", map[string]any{"credentialID": cred, "SAD": sad, "hash": hash,
			"hashAlgo": "2.16.840.1.101.3.4.2.1", "signAlgo": "1.2.840.113549.1.1.1"})
	}
	if a.status != 400 || a.res["error"] != "invalid_pin" || a.res["SAD"] != nil {
		t.Errorf("authorize with the old PIN across set-pin: %d %v, want 400 invalid_pin and no SAD", a.status, a.res)
		if sad, _ := a.res["SAD"].(string); sad != "" {
			if status, res := signHash(sad); status == 200 {
				t.Fatalf("and the old PIN's SAD signed: %v", res)
			}
		}
	}

	status, res := authorize(newPIN)
	sad, _ := res["SAD"].(string)
	if status != 200 || sad == "" {
		t.Fatalf("authorize with the new PIN: %d %v", status, res)
	}
	_, info := call("credentials/info", map[string]any{"credentialID": cred, "certificates": "single"})
	leafDER, _ := base64.StdEncoding.DecodeString(info["cert"].(map[string]any)["certificates"].([]any)[0].(string))
	status, res = signHash(sad)
	verifyRSA(t, leafDER, d[:], signaturesOf(t, status, res, 1)[0])
}

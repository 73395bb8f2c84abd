package main

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
	softhsmtest "github.com/signd/signd/softhsm-test"
)

// TestTokenJourney is the operator's journey on whatever token the tests
// run on: SoftHSM2 by default, opencryptoki or tpm2-pkcs11 under `make
// test-tokens` (SIGND_TEST_PKCS11_LABEL). user add, client add,
// credential create rsa-2048 and, where the token has
// CKM_EC_KEY_PAIR_GEN, ec-p256; serve reaches /readyz 200; the JWKS has
// the ID-token key and an ID token verifies with it; a signHash with each
// credential verifies with `openssl pkeyutl -verify`. Then the key
// freeze: either the token refuses to relabel the key and gives it no
// usage beyond signing, or signd's log says which of the two it does not
// keep.
func TestTokenJourney(t *testing.T) {
	e := newEnv(t, "")
	creds := map[string]string{"rsa-2048": journeyAlice(t, e)} // user add, client add, credential create (rsa-2048)
	if _, errOut, err := e.run("", "credential", "create", "--user", "alice", "--key-type", "ec-p256", "--csr-out", filepath.Join(e.dir, "ec.csr")); err != nil {
		// Only a token without the mechanism may refuse, and the refusal
		// the operator reads must say so (not "internal error").
		if !token.External || !strings.Contains(err.Error(), "CKM_EC_KEY_PAIR_GEN") {
			t.Fatalf("credential create --key-type ec-p256: %v\n%s", err, errOut)
		}
		t.Logf("token %q: no ec-p256: %v", token.Label, err)
	} else {
		os.Remove(filepath.Join(e.dir, "ec.csr"))
		creds["ec-p256"] = enrollKeyType(t, e, "alice", "--key-type", "ec-p256")
	}
	secretFile := filepath.Join(e.dir, "oidc-secret.txt")
	if err := os.WriteFile(secretFile, []byte(journeySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// ID tokens are for users with a verified e-mail address.
	e.must(journeyPassword+"\n", "user", "add", "olivia", "--password-file", "-", "--email", "olivia@example.com", "--email-verified")
	e.must("", "client", "add", "oidc-rp", "--redirect-uri", "https://rp.example/cb", "--secret-file", secretFile, "--scope", "openid")

	logs := &syncBuffer{}
	addr, stop := e.startDaemonWith(func(a *app) { a.stderr = logs })
	base := "http://" + addr
	if res, err := http.Get(base + "/readyz"); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %v %v", res, err)
	}

	// The ID-token key is in the JWKS, and an ID token verifies with it.
	_, set := jwksKIDs(t, base)
	if len(set.Keys) != 1 {
		t.Fatalf("JWKS has %d keys, want the one ID-token key", len(set.Keys))
	}
	conf, ctx := journeyClient(base)
	conf.ClientID, conf.Scopes = "oidc-rp", []string{"openid"}
	browser := oauthtest.NewBrowser(nil)
	s, err := browser.Get(conf.AuthCodeURL("st", oauth2.SetAuthURLParam("nonce", "n-1"), oauth2.SetAuthURLParam("lang", "en")))
	if err == nil && s.Form != nil {
		s, err = browser.Submit(s.Form, map[string]string{"username": "olivia", "password": journeyPassword}, "approve")
	}
	if err == nil && s.Form != nil {
		s, err = browser.Submit(s.Form, nil, "approve")
	}
	if err != nil || !s.Redirected() || s.Query().Get("code") == "" {
		t.Fatalf("authorize: %v %d %v %s", err, s.Status, s.Location, oauthtest.Text(s.Body))
	}
	tok, err := conf.Exchange(ctx, s.Query().Get("code"))
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256})
	if err != nil {
		t.Fatalf("ID token %q: %v", raw, err)
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("the JWKS has no key %q", jws.Signatures[0].Header.KeyID)
	}
	payload, err := jws.Verify(keys[0])
	if err != nil {
		t.Fatalf("the ID token does not verify with the JWKS: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil || claims["aud"] != "oidc-rp" || claims["nonce"] != "n-1" || claims["sub"] == "" {
		t.Errorf("ID token claims %v (%v)", claims, err)
	}

	// signHash with each credential, verified by openssl.
	flow := oauthFlow(t, base)
	service := flow("service", "state-service")
	for keyType, cred := range creds {
		t.Run("signHash "+keyType, func(t *testing.T) {
			status, info := postJSON(t, base+"/csc/v1/credentials/info", service.AccessToken, `{"credentialID":"`+cred+`","certificates":"single"}`)
			if status != http.StatusOK {
				t.Fatalf("credentials/info: %d %v", status, info)
			}
			leafDER, _ := base64.StdEncoding.DecodeString(info["cert"].(map[string]any)["certificates"].([]any)[0].(string))
			if _, err := x509.ParseCertificate(leafDER); err != nil {
				t.Fatal(err)
			}
			digest := sha256.Sum256([]byte("signed on token " + token.Label))
			signAlgo := map[string]string{"rsa-2048": "1.2.840.113549.1.1.1", "ec-p256": "1.2.840.10045.4.3.2"}[keyType]
			body, _ := json.Marshal(map[string]any{
				"credentialID": cred, "SAD": credentialFlow(flow, cred, digest[:]), "hash": []string{base64.StdEncoding.EncodeToString(digest[:])},
				"hashAlgo": "2.16.840.1.101.3.4.2.1", "signAlgo": signAlgo,
			})
			status, res := postJSON(t, base+"/csc/v1/signatures/signHash", service.AccessToken, string(body))
			if status != http.StatusOK {
				t.Fatalf("signHash: %d %v\nlog:\n%s", status, res, logs.String())
			}
			sig, err := base64.StdEncoding.DecodeString(res["signatures"].([]any)[0].(string))
			if err != nil {
				t.Fatal(err)
			}
			softhsmtest.VerifyWithOpenSSLOpts(t, leafDER, digest[:], sig, "digest:sha256")
		})
	}

	// The key freeze, probed on the token itself once the daemon has let
	// go of it.
	stop()
	for keyType, cred := range creds {
		label := "signd-" + cred
		f, err := token.KeyFreeze(label)
		if err != nil {
			t.Fatalf("%s: %v", keyType, err)
		}
		t.Logf("%s key %s on %q: relabel refused %v (%s), usages beyond signing %v", keyType, label, token.Label, f.RelabelRefused, f.RelabelCode, f.ExtraUsages)
		if f.RelabelRefused && len(f.ExtraUsages) == 0 {
			continue
		}
		// The token does not keep the promise: signd must have said so,
		// naming the key and each defect.
		var warned []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "WARN") && strings.Contains(line, label) {
				warned = append(warned, line)
			}
		}
		said := strings.ToLower(strings.Join(warned, ""))
		if !f.RelabelRefused && !strings.Contains(said, "label") {
			t.Errorf("%s: the token let the key %s be relabelled, and signd's log has no warning naming the key and that:\n%s", keyType, label, logs.String())
		}
		for _, u := range f.ExtraUsages {
			usage := strings.ToLower(strings.TrimPrefix(u, "CKA_"))
			if !strings.Contains(said, usage) {
				t.Errorf("%s: the key %s has %s, and signd's log has no warning naming the key and %s:\n%s", keyType, label, u, usage, logs.String())
			}
		}
	}
}

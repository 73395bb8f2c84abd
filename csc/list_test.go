package csc_test

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

func TestInfo(t *testing.T) {
	e := newEnv(t)
	for name, b := range map[string]string{"empty object": "{}", "lang": `{"lang":"nl-NL"}`, "empty body": ""} {
		t.Run(name, func(t *testing.T) {
			r := e.call("info", "", b)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			want := map[string]any{
				"specs": "1.0.4.0", "name": "signd test", "logo": "https://sign.example.com/logo.png",
				"region": "NL", "lang": "en-US", "description": "test service",
				"authType": []any{"oauth2code"}, "oauth2": "https://sign.example.com",
				"methods": []any{"info", "credentials/list", "credentials/info", "credentials/extendTransaction", "credentials/sendOTP", "signatures/signHash"},
			}
			if fmt.Sprint(r.body) != fmt.Sprint(want) {
				t.Errorf("info =\n%v\nwant\n%v", r.body, want)
			}
		})
	}
}

// listAll walks alice's list with maxResults n and returns every ID seen,
// in order, and the number of pages.
func listAll(t *testing.T, e *env, bearer string, maxResults any) ([]string, int) {
	t.Helper()
	var ids []string
	token := ""
	for pages := 1; pages < 100; pages++ {
		kv := []any{"maxResults", maxResults, "clientData", "walk"}
		if token != "" {
			kv = append(kv, "pageToken", token)
		}
		r := e.call("credentials/list", bearer, body(kv...))
		if r.status != http.StatusOK {
			t.Fatalf("page %d: %d %s", pages, r.status, r.raw)
		}
		got, _ := r.body["credentialIDs"].([]any)
		for _, id := range got {
			ids = append(ids, id.(string))
		}
		next, has := r.body["nextPageToken"]
		if !has {
			return ids, pages
		}
		token = next.(string)
		if token == "" {
			t.Fatal("empty nextPageToken")
		}
	}
	t.Fatal("paging does not end")
	return nil, 0
}

func TestListPaging(t *testing.T) {
	e := newEnv(t)
	alice := e.accessToken("alice", "rp1")
	bob := e.accessToken("bob", "rp1")
	var want []string
	for i := range 5 {
		s := valid("alice", keyA)
		if i == 3 {
			s.status = store.CredentialDisabled // listed: info tells it is disabled
		}
		want = append(want, e.credential(s))
	}
	e.credential(credSpec{owner: "alice", key: keyB, status: store.CredentialPending}) // not listed
	var bobs []string
	for range 4 {
		bobs = append(bobs, e.credential(valid("bob", keyB)))
	}
	slices.Sort(want)
	slices.Sort(bobs)

	for _, maxResults := range []any{1, "1", 2, 5, "1000000000000"} {
		t.Run(fmt.Sprintf("maxResults %v", maxResults), func(t *testing.T) {
			ids, pages := listAll(t, e, alice, maxResults)
			if !slices.Equal(ids, want) {
				t.Errorf("walked %v, want %v (each once, in order)", ids, want)
			}
			if n := fmt.Sprint(maxResults); n == "1" && pages != len(want) {
				t.Errorf("%d pages of 1 for %d credentials", pages, len(want))
			}
		})
	}
	t.Run("bob sees only his", func(t *testing.T) {
		ids, _ := listAll(t, e, bob, 1)
		if !slices.Equal(ids, bobs) {
			t.Errorf("bob walked %v, want %v", ids, bobs)
		}
	})
	t.Run("default page", func(t *testing.T) {
		r := e.call("credentials/list", alice, "{}")
		if got := r.body["credentialIDs"].([]any); len(got) != len(want) {
			t.Errorf("%d IDs", len(got))
		}
		if _, has := r.body["nextPageToken"]; has {
			t.Error("nextPageToken on the only page")
		}
	})
	t.Run("configured default and limit", func(t *testing.T) {
		defer func(d, l int) { e.h.MaxResultsDefault, e.h.MaxResultsLimit = d, l }(e.h.MaxResultsDefault, e.h.MaxResultsLimit)
		e.h.MaxResultsDefault, e.h.MaxResultsLimit = 2, 3
		if got := e.call("credentials/list", alice, "{}").body["credentialIDs"].([]any); len(got) != 2 {
			t.Errorf("default page of %d", len(got))
		}
		if got := e.call("credentials/list", alice, `{"maxResults":50}`).body["credentialIDs"].([]any); len(got) != 3 {
			t.Errorf("maxResults over the limit gave %d", len(got))
		}
	})
	t.Run("user without credentials", func(t *testing.T) {
		e.update(func(tx store.Tx) error {
			return tx.CreateUser(&store.User{ID: "carol-id", Username: "carol", Status: store.UserActive})
		})
		r := e.call("credentials/list", e.accessToken("carol", "rp1"), "{}")
		if string(r.raw) != `{"credentialIDs":[]}`+"\n" {
			t.Errorf("empty list = %s", r.raw)
		}
	})

	first := e.call("credentials/list", alice, `{"maxResults":1}`)
	token := first.str("nextPageToken")
	t.Run("page token is opaque", func(t *testing.T) {
		if strings.Contains(token, want[0]) || !regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(token) {
			t.Errorf("page token %q", token)
		}
	})
	t.Run("tampered page token", func(t *testing.T) {
		raw, _ := base64.RawURLEncoding.DecodeString(token)
		for i := range raw {
			bad := slices.Clone(raw)
			bad[i] ^= 0x20
			r := e.call("credentials/list", alice, body("maxResults", 1, "pageToken", base64.RawURLEncoding.EncodeToString(bad)))
			wantError(t, r, http.StatusBadRequest, "invalid_request", "Invalid parameter pageToken")
		}
		// A forged token naming a later position.
		forged := base64.RawURLEncoding.EncodeToString(append([]byte(want[3]), raw[len(raw)-16:]...))
		wantError(t, e.call("credentials/list", alice, body("pageToken", forged)), http.StatusBadRequest, "invalid_request", "Invalid parameter pageToken")
	})
	t.Run("page token in another spelling", func(t *testing.T) {
		// The base64 decoder skips line breaks (and pad bits): a token
		// has exactly one accepted spelling (found by FuzzPageToken).
		for _, respelt := range []string{token[:10] + "\n" + token[10:], token + "\r\n"} {
			r := e.call("credentials/list", alice, body("maxResults", 1, "pageToken", respelt))
			wantError(t, r, http.StatusBadRequest, "invalid_request", "Invalid parameter pageToken")
		}
	})
	t.Run("page token of another user", func(t *testing.T) {
		wantError(t, e.call("credentials/list", bob, body("pageToken", token)), http.StatusBadRequest, "invalid_request", "Invalid parameter pageToken")
	})
	t.Run("userID null is allowed", func(t *testing.T) {
		if r := e.call("credentials/list", alice, `{"userID":null}`); r.status != http.StatusOK {
			t.Errorf("%d %s", r.status, r.raw)
		}
	})
}

func TestCredentialInfo(t *testing.T) {
	e := newEnv(t)
	alice := e.accessToken("alice", "rp1")
	okID := e.credential(credSpec{owner: "alice", key: keyA, status: store.CredentialEnabled, nb: -time.Hour, na: 24 * time.Hour, desc: "Alice's signing key"})
	dis := valid("alice", keyA)
	dis.status = store.CredentialDisabled
	disabled := e.credential(dis)
	exp := valid("alice", keyB)
	exp.nb, exp.na = -48*time.Hour, -time.Hour
	expired := e.credential(exp)
	ny := valid("alice", keyB)
	ny.nb = time.Hour
	notYet := e.credential(ny)

	leaf, _ := x509.ParseCertificate(e.creds[okID].Chain[0])
	cases := []struct {
		name        string
		req         string
		certs       int
		certInfo    bool
		keyStatus   string
		certStatus  string
		description string
	}{
		{"default single", body("credentialID", okID), 1, false, "enabled", "valid", "Alice's signing key"},
		{"chain with certInfo (pyHanko, Cleverbase)", body("credentialID", okID, "certificates", "chain", "certInfo", true, "authInfo", true), 2, true, "enabled", "valid", "Alice's signing key"},
		{"none", body("credentialID", okID, "certificates", "none", "certInfo", false), 0, false, "enabled", "valid", "Alice's signing key"},
		{"disabled by an admin", body("credentialID", disabled), 1, false, "disabled", "valid", "RSA-2048 signing key"},
		{"expired certificate", body("credentialID", expired), 1, false, "disabled", "expired", "RSA-2048 signing key"},
		{"certificate not yet valid", body("credentialID", notYet), 1, false, "disabled", "valid", "RSA-2048 signing key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("credentials/info", alice, tc.req)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			key := r.body["key"].(map[string]any)
			cert := r.body["cert"].(map[string]any)
			if key["status"] != tc.keyStatus || cert["status"] != tc.certStatus {
				t.Errorf("key.status %v cert.status %v, want %s %s", key["status"], cert["status"], tc.keyStatus, tc.certStatus)
			}
			if fmt.Sprint(key["algo"]) != "[1.2.840.113549.1.1.1 1.2.840.113549.1.1.11 1.2.840.113549.1.1.12 1.2.840.113549.1.1.13 1.2.840.113549.1.1.10]" || key["len"] != float64(2048) || key["curve"] != nil {
				t.Errorf("key = %v", key)
			}
			if !strings.Contains(string(r.raw), `"len":2048`) || !strings.Contains(string(r.raw), `"multisign":1`) || !strings.Contains(string(r.raw), `"SCAL":"2"`) {
				t.Errorf("len, multisign or SCAL badly typed: %s", r.raw)
			}
			if r.body["authMode"] != "oauth2code" || r.body["lang"] != "en-US" || r.body["description"] != tc.description {
				t.Errorf("info = %s", r.raw)
			}
			certs, _ := cert["certificates"].([]any)
			if len(certs) != tc.certs {
				t.Fatalf("%d certificates, want %d", len(certs), tc.certs)
			}
			if tc.name == "default single" || tc.certs == 2 {
				der, err := base64.StdEncoding.Strict().DecodeString(certs[0].(string))
				if err != nil || !slices.Equal(der, e.creds[okID].Chain[0]) {
					t.Error("first certificate is not the leaf")
				}
			}
			_, hasInfo := cert["subjectDN"]
			if hasInfo != tc.certInfo {
				t.Errorf("certInfo fields present %v, want %v", hasInfo, tc.certInfo)
			}
			if tc.certInfo {
				want := map[string]string{
					"subjectDN":    "CN=alice signer,O=Example Org,C=NL",
					"issuerDN":     "CN=signd test CA,O=Test CA Org",
					"serialNumber": strings.ToUpper(leaf.SerialNumber.Text(16)),
					"validFrom":    leaf.NotBefore.UTC().Format("20060102150405Z"),
					"validTo":      leaf.NotAfter.UTC().Format("20060102150405Z"),
				}
				if len(want["serialNumber"])%2 == 1 {
					want["serialNumber"] = "0" + want["serialNumber"]
				}
				for k, v := range want {
					if cert[k] != v {
						t.Errorf("cert.%s = %v, want %s", k, cert[k], v)
					}
				}
			}
		})
	}
}

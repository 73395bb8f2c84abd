package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/admin"
)

// Tiny files of each proof content type, by their magic bytes.
var (
	testPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	testPDF = []byte("%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")
	testJPG = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9")
)

func (e *env) file(name string, data []byte) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) oidcKeys() []admin.OIDCKeyView {
	e.t.Helper()
	var ks []admin.OIDCKeyView
	if err := json.Unmarshal([]byte(e.must("", "oidc", "keys", "list", "--json")), &ks); err != nil {
		e.t.Fatal(err)
	}
	return ks
}

// `signd oidc keys` without a daemon: the first key is active at once, the
// next one waits in the JWKS, rotate promotes it.
func TestOIDCKeysCLILocal(t *testing.T) {
	e := newEnv(t, "")
	if ks := e.oidcKeys(); len(ks) != 0 {
		t.Fatalf("fresh store has keys: %+v", ks)
	}
	out := e.must("", "oidc", "keys", "create")
	if !strings.Contains(out, "state:      active") {
		t.Errorf("first key:\n%s", out)
	}
	out = e.must("", "oidc", "keys", "create")
	if !strings.Contains(out, "state:      next") {
		t.Errorf("second key:\n%s", out)
	}
	if _, _, err := e.run("", "oidc", "keys", "create"); err == nil || !strings.Contains(err.Error(), "already published") {
		t.Errorf("third create: %v", err)
	}
	if _, _, err := e.run("", "oidc", "keys", "rotate"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("rotate right away: %v", err)
	}
	ks := e.oidcKeys()
	out = e.must("", "oidc", "keys", "rotate", "--force")
	if !strings.Contains(out, "active:   "+ks[1].KID) || !strings.Contains(out, "retired:  "+ks[0].KID) {
		t.Errorf("rotate:\n%s", out)
	}
	after := e.oidcKeys()
	if len(after) != 2 || after[0].State != "retired" || after[1].State != "active" || after[0].PublishedUntil == nil {
		t.Errorf("after rotation: %+v", after)
	}
	if _, _, err := e.run("", "oidc", "keys", "rotate"); err == nil || !strings.Contains(err.Error(), "signd oidc keys create") {
		t.Errorf("rotate without next key: %v", err)
	}
	table := e.must("", "oidc", "keys", "list")
	if !strings.Contains(table, "KID") || !strings.Contains(table, "retired") {
		t.Errorf("list:\n%s", table)
	}
}

// With the daemon running, the commands go through the admin socket and
// the daemon's JWKS follows at once; the daemon made the first key.
func TestOIDCKeysCLIDaemon(t *testing.T) {
	e := newEnv(t, "")
	addr, logs := e.daemon()
	ks := e.oidcKeys()
	if len(ks) != 1 || ks[0].State != "active" {
		t.Fatalf("keys after start: %+v", ks)
	}
	e.must("", "oidc", "keys", "create")
	jwks := func() []string {
		kids, _ := jwksKIDs(t, "http://"+addr)
		return kids
	}
	if got := jwks(); len(got) != 2 {
		t.Errorf("JWKS after create: %v", got)
	}
	e.must("", "oidc", "keys", "rotate", "--force")
	if got := jwks(); len(got) != 2 {
		t.Errorf("JWKS after rotate: %v (the retired key stays published)", got)
	}
	if !strings.Contains(logs.String(), "oidc: signing key activated") {
		t.Errorf("the rotation did not run in the daemon:\n%s", logs.String())
	}
}

// `signd user add-proof`, with and without the daemon: the same answers.
func TestAddProofCLI(t *testing.T) {
	for _, mode := range []string{"local", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, "")
			if mode == "daemon" {
				e.daemon()
			}
			e.must("a password!\n", "user", "add", "anne", "--password-file", "-", "--email", "anne@example.com", "--email-verified")
			png, pdf, jpg := e.file("scan.png", testPNG), e.file("scan.pdf", testPDF), e.file("scan.jpg", testJPG)
			big := e.file("big.pdf", append(bytes.Clone(testPDF), make([]byte, 10<<20)...))
			limit := e.file("limit.pdf", append(bytes.Clone(testPDF), make([]byte, 10<<20-len(testPDF))...))
			e.must("", "user", "add-proof", "anne", "--id", "largest", "--content-type", "application/pdf", "--file", limit)
			e.must("", "user", "add-proof", "anne", "--id", "passport-front", "--content-type", "image/png", "--file", png)
			e.must("", "user", "add-proof", "anne", "--id", "passport-back", "--content-type", "image/jpeg", "--file", jpg)
			out := e.must(string(testPDF), "user", "add-proof", "anne", "--id", "letter", "--content-type", "application/pdf", "--file", "-")
			if !strings.Contains(out, "proofs:          largest, passport-front, passport-back, letter") {
				t.Errorf("user after add-proof:\n%s", out)
			}
			fails := []struct {
				args []string
				want string
			}{
				{[]string{"anne", "--id", "x", "--content-type", "image/png", "--file", pdf}, "the file is application/pdf, not image/png"},
				{[]string{"anne", "--id", "x", "--content-type", "image/gif", "--file", png}, `content type "image/gif" is not accepted`},
				{[]string{"anne", "--id", "x", "--content-type", "application/pdf", "--file", big}, "larger than 10485760 bytes"},
				{[]string{"nobody", "--id", "x", "--content-type", "image/png", "--file", png}, `user "nobody": not found`},
				{[]string{"anne", "--id", "has space", "--content-type", "image/png", "--file", png}, `proof ID "has space" has a character`},
				{[]string{"anne", "--content-type", "image/png", "--file", png}, `required flag(s) "id" not set`},
			}
			for _, f := range fails {
				_, _, err := e.run("", append([]string{"user", "add-proof"}, f.args...)...)
				if err == nil || !strings.Contains(err.Error(), f.want) {
					t.Errorf("add-proof %v: %v, want %q", f.args, err, f.want)
				}
			}
		})
	}
}

// An OIDC client whose redirect URIs span hosts needs a sector identifier.
func TestClientAddSectorCLI(t *testing.T) {
	e := newEnv(t, "")
	two := []string{"--redirect-uri", "https://a.example.com/cb", "--redirect-uri", "https://b.example.com/cb"}
	_, _, err := e.run("", append([]string{"client", "add", "rp", "--scope", "openid"}, two...)...)
	if err == nil || !strings.Contains(err.Error(), "--sector-identifier") {
		t.Errorf("client add across hosts: %v", err)
	}
	e.must("", append([]string{"client", "add", "rp", "--scope", "openid", "--sector-identifier", "example.com"}, two...)...)
	// Not an OIDC client: no sector needed.
	e.must("", append([]string{"client", "add", "svc", "--scope", "service"}, two...)...)
}

package storetest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/signd/signd/store"
)

// Validation.

func testInvalidUsers(t *testing.T, s store.Store) {
	valid := []struct {
		name string
		edit func(u *store.User)
	}{
		{"64 characters", func(u *store.User) { u.Username = strings.Repeat("a", 64) }},
		{"every allowed character", func(u *store.User) { u.Username = "Az09._@-" }},
		{"single character", func(u *store.User) { u.Username = "x" }},
		{"no password, PIN, TOTP or email", func(u *store.User) {
			u.PasswordHash, u.PINHash, u.TOTPSecret, u.Email, u.EmailVerified, u.Claims = "", "", "", "", false, nil
		}},
		{"padded lowercase TOTP secret", func(u *store.User) { u.Username, u.TOTPSecret = "totp", "jbswy3dpehpk3pxp====" }},
	}
	for _, tc := range valid {
		t.Run("valid/"+tc.name, func(t *testing.T) {
			u := newUser(t, "valid")
			tc.edit(u)
			if err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateUser(u) }); err != nil {
				t.Errorf("CreateUser: %v", err)
			}
		})
	}
	invalid := []struct {
		name string
		edit func(u *store.User)
	}{
		{"empty username", func(u *store.User) { u.Username = "" }},
		{"path traversal", func(u *store.User) { u.Username = "../x" }},
		{"slash", func(u *store.User) { u.Username = "a/b" }},
		{"space", func(u *store.User) { u.Username = "a b" }},
		{"65 characters", func(u *store.User) { u.Username = strings.Repeat("a", 65) }},
		{"NUL", func(u *store.User) { u.Username = "a\x00b" }},
		{"newline", func(u *store.User) { u.Username = "a\nb" }},
		{"non-ASCII", func(u *store.User) { u.Username = "jösé" }},
		{"markup", func(u *store.User) { u.Username = "<script>" }},
		{"colon", func(u *store.User) { u.Username = "a:b" }},
		{"empty ID", func(u *store.User) { u.ID = "" }},
		{"ID with space", func(u *store.User) { u.ID = "a b" }},
		{"empty status", func(u *store.User) { u.Status = "" }},
		{"unknown status", func(u *store.User) { u.Status = "locked" }},
		{"plaintext password", func(u *store.User) { u.PasswordHash = "hunter2" }},
		{"malformed PIN hash", func(u *store.User) { u.PINHash = "$argon2id$v=19$m=64,t=1,p=1$garbage" }},
		{"TOTP not base32", func(u *store.User) { u.TOTPSecret = "not base32!" }},
		{"negative password failures", func(u *store.User) { u.FailedPasswords = -1 }},
		{"negative PIN failures", func(u *store.User) { u.FailedPINs = -1 }},
		{"negative password lockouts", func(u *store.User) { u.PasswordLockouts = -1 }},
		{"email without @", func(u *store.User) { u.Email = "not-an-email" }},
		{"email with display name", func(u *store.User) { u.Email = "Bob <bob@example.com>" }},
		{"verified empty email", func(u *store.User) { u.Email, u.EmailVerified = "", true }},
		{"empty claim name", func(u *store.User) { u.Claims = map[string]string{"": "x"} }},
		{"claim value with control character", func(u *store.User) { u.Claims = map[string]string{"given_name": "a\x1b[31m"} }},
		{"proofs on create", func(u *store.User) {
			u.Proofs = []store.ProofRef{{ID: "p", ContentType: store.ProofPDF, Size: 1, SHA256: store.ProofDigest([]byte("x"))}}
		}},
	}
	for _, tc := range invalid {
		t.Run("invalid/"+tc.name, func(t *testing.T) {
			u := newUser(t, "bob")
			tc.edit(u)
			err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateUser(u) })
			wantErr(t, "CreateUser", err, store.ErrInvalid)
		})
	}
	// PutUser validates too.
	createUsers(t, s, "carol")
	for _, tc := range invalid {
		probe := newUser(t, "carol")
		if tc.edit(probe); probe.Username != "carol" || len(probe.Proofs) != 0 {
			continue // not a PutUser of carol, or ignored by PutUser
		}
		t.Run("PutUser/"+tc.name, func(t *testing.T) {
			err := s.Update(context.Background(), func(tx store.Tx) error {
				u, err := tx.User("carol")
				if err != nil {
					return err
				}
				tc.edit(u)
				return tx.PutUser(u)
			})
			wantErr(t, "PutUser", err, store.ErrInvalid)
		})
	}
	var n int
	view(t, s, func(tx store.Tx) error {
		users, err := tx.Users()
		n = len(users)
		return err
	})
	if want := len(valid) + 1; n != want {
		t.Errorf("%d users stored, want %d (only the valid ones)", n, want)
	}
}

func testInvalidClients(t *testing.T, s store.Store) {
	valid := []struct {
		name string
		edit func(c *store.Client)
	}{
		{"loopback http", func(c *store.Client) { c.RedirectURIs = []string{"http://127.0.0.1:8080/cb"} }},
		{"custom scheme", func(c *store.Client) { c.RedirectURIs = []string{"com.example.app:/oauth2redirect"} }},
		{"query string", func(c *store.Client) { c.RedirectURIs = []string{"https://rp.example.com/cb?x=1"} }},
		{"no scopes, no name", func(c *store.Client) { c.Scopes, c.Name = nil, "" }},
		{"128-character ID", func(c *store.Client) { c.ID = strings.Repeat("c", 128) }},
	}
	for i, tc := range valid {
		t.Run("valid/"+tc.name, func(t *testing.T) {
			c := newClient(fmt.Sprintf("valid-%d", i))
			tc.edit(c)
			if err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateClient(c) }); err != nil {
				t.Errorf("CreateClient: %v", err)
			}
		})
	}
	invalid := []struct {
		name string
		edit func(c *store.Client)
	}{
		{"empty ID", func(c *store.Client) { c.ID = "" }},
		{"ID with space", func(c *store.Client) { c.ID = "my client" }},
		{"ID with NUL", func(c *store.Client) { c.ID = "a\x00b" }},
		{"ID with non-ASCII", func(c *store.Client) { c.ID = "clïent" }},
		{"129-character ID", func(c *store.Client) { c.ID = strings.Repeat("c", 129) }},
		{"no secret hash", func(c *store.Client) { c.SecretHash = "" }},
		{"plaintext secret", func(c *store.Client) { c.SecretHash = "hunter2" }},
		{"truncated secret hash", func(c *store.Client) { c.SecretHash = "sha256$abc" }},
		{"no redirect URI", func(c *store.Client) { c.RedirectURIs = nil }},
		{"relative redirect URI", func(c *store.Client) { c.RedirectURIs = []string{"/cb"} }},
		{"redirect URI with fragment", func(c *store.Client) { c.RedirectURIs = []string{"https://rp.example.com/cb#frag"} }},
		{"redirect URI with empty fragment", func(c *store.Client) { c.RedirectURIs = []string{"https://rp.example.com/cb#"} }},
		{"javascript: redirect URI", func(c *store.Client) { c.RedirectURIs = []string{"javascript:alert(1)"} }},
		{"data: redirect URI", func(c *store.Client) { c.RedirectURIs = []string{"data:text/html,hi"} }},
		{"https without host", func(c *store.Client) { c.RedirectURIs = []string{"https:///cb"} }},
		{"user info", func(c *store.Client) { c.RedirectURIs = []string{"https://user:pw@rp.example.com/cb"} }},
		{"space in redirect URI", func(c *store.Client) { c.RedirectURIs = []string{"https://rp.example.com/a b"} }},
		{"one bad redirect URI among good", func(c *store.Client) {
			c.RedirectURIs = []string{"https://rp.example.com/cb", "cb"}
		}},
		{"scheme only", func(c *store.Client) { c.RedirectURIs = []string{"myapp:"} }},
		{"empty scope", func(c *store.Client) { c.Scopes = []string{""} }},
		{"scope with space", func(c *store.Client) { c.Scopes = []string{"openid email"} }},
		{"sector with space", func(c *store.Client) { c.SectorIdentifier = "rp example" }},
		{"name with control character", func(c *store.Client) { c.Name = "a\x07" }},
		{"ID-token alg none", func(c *store.Client) { c.IDTokenSignedResponseAlg = "none" }},
		{"ID-token alg HS256", func(c *store.Client) { c.IDTokenSignedResponseAlg = "HS256" }},
		{"ID-token alg lower case", func(c *store.Client) { c.IDTokenSignedResponseAlg = "es256" }},
		{"ID-token alg 1000 bytes", func(c *store.Client) { c.IDTokenSignedResponseAlg = strings.Repeat("R", 1000) }},
	}
	for _, tc := range invalid {
		t.Run("invalid/"+tc.name, func(t *testing.T) {
			c := newClient("bad")
			tc.edit(c)
			err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateClient(c) })
			wantErr(t, "CreateClient", err, store.ErrInvalid)
		})
	}
	update(t, s, func(tx store.Tx) error { return tx.CreateClient(newClient("rp")) })
	for _, tc := range invalid {
		probe := newClient("rp")
		if tc.edit(probe); probe.ID != "rp" {
			continue // not a PutClient of rp
		}
		t.Run("PutClient/"+tc.name, func(t *testing.T) {
			c := newClient("rp")
			tc.edit(c)
			err := s.Update(context.Background(), func(tx store.Tx) error { return tx.PutClient(c) })
			wantErr(t, "PutClient", err, store.ErrInvalid)
		})
	}
	var n int
	view(t, s, func(tx store.Tx) error {
		clients, err := tx.Clients()
		n = len(clients)
		return err
	})
	if want := len(valid) + 1; n != want {
		t.Errorf("%d clients stored, want %d", n, want)
	}
}

func testInvalidCredentials(t *testing.T, s store.Store) {
	createUsers(t, s, "alice")
	valid := []struct {
		name string
		edit func(c *store.Credential)
	}{
		{"rsa-3072", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgRSA3072, 3072 }},
		{"rsa-4096", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgRSA4096, 4096 }},
		{"ec-p256", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgECP256, 256 }},
		{"ec-p384", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgECP384, 384 }},
		{"ec-p521", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgECP521, 521 }},
		{"64-byte key ID", func(c *store.Credential) { c.KeyID = bytes.Repeat([]byte{0}, 64) }},
		{"enabled with chain", func(c *store.Credential) {
			c.Status, c.Chain = store.CredentialEnabled, [][]byte{[]byte("leaf")}
		}},
		{"disabled without chain", func(c *store.Credential) { c.Status = store.CredentialDisabled }},
		{"disabled by the owner", func(c *store.Credential) {
			c.Status, c.DisabledBy, c.Chain = store.CredentialDisabled, store.DisabledByOwner, [][]byte{[]byte("leaf")}
		}},
		{"disabled by an admin", func(c *store.Credential) { c.Status, c.DisabledBy = store.CredentialDisabled, store.DisabledByAdmin }},
		{"description of 1024 bytes", func(c *store.Credential) { c.Description = strings.Repeat("d", 1024) }},
		{"description in Dutch", func(c *store.Credential) { c.Description = "Bedrijfszegel — ‘Offertes’ 2027" }},
		{"no description", func(c *store.Credential) { c.Description = "" }},
	}
	for i, tc := range valid {
		t.Run("valid/"+tc.name, func(t *testing.T) {
			c := newCredential(fmt.Sprintf("valid-%d", i), "alice")
			tc.edit(c)
			if err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateCredential(c) }); err != nil {
				t.Errorf("CreateCredential: %v", err)
			}
		})
	}
	invalid := []struct {
		name string
		edit func(c *store.Credential)
	}{
		{"owner does not exist", func(c *store.Credential) { c.Owner = "nobody" }},
		{"hostile owner", func(c *store.Credential) { c.Owner = "../alice" }},
		{"empty owner", func(c *store.Credential) { c.Owner = "" }},
		{"empty ID", func(c *store.Credential) { c.ID = "" }},
		{"ID with space", func(c *store.Credential) { c.ID = "a b" }},
		{"ID with NUL", func(c *store.Credential) { c.ID = "a\x00b" }},
		{"unknown algorithm", func(c *store.Credential) { c.Algorithm, c.KeyBits = "ec-256", 256 }},
		{"empty algorithm", func(c *store.Credential) { c.Algorithm = "" }},
		{"ec-p224", func(c *store.Credential) { c.Algorithm, c.KeyBits = "ec-p224", 224 }},
		{"ec-p521 with 512 bits", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgECP521, 512 }},
		{"ec-p256 with 384 bits", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgECP256, 384 }},
		{"ec-p384 with RSA bits", func(c *store.Credential) { c.Algorithm, c.KeyBits = store.AlgECP384, 2048 }},
		{"algorithm in capitals", func(c *store.Credential) { c.Algorithm, c.KeyBits = "EC-P256", 256 }},
		{"key bits do not match", func(c *store.Credential) { c.KeyBits = 4096 }},
		{"no key bits", func(c *store.Credential) { c.KeyBits = 0 }},
		{"empty key ID", func(c *store.Credential) { c.KeyID = nil }},
		{"65-byte key ID", func(c *store.Credential) { c.KeyID = bytes.Repeat([]byte{1}, 65) }},
		{"unknown status", func(c *store.Credential) { c.Status = "active" }},
		{"empty status", func(c *store.Credential) { c.Status = "" }},
		{"pending with chain", func(c *store.Credential) { c.Chain = [][]byte{[]byte("leaf")} }},
		{"enabled names who disabled it", func(c *store.Credential) {
			c.Status, c.Chain, c.DisabledBy = store.CredentialEnabled, [][]byte{[]byte("leaf")}, store.DisabledByOwner
		}},
		{"pending names who disabled it", func(c *store.Credential) { c.DisabledBy = store.DisabledByAdmin }},
		{"disabled by someone unknown", func(c *store.Credential) { c.Status, c.DisabledBy = store.CredentialDisabled, "mallory" }},
		{"enabled without chain", func(c *store.Credential) { c.Status = store.CredentialEnabled }},
		{"empty certificate", func(c *store.Credential) {
			c.Status, c.Chain = store.CredentialEnabled, [][]byte{[]byte("leaf"), {}}
		}},
		// The description is shown to the owner on the consent and account
		// pages.
		{"description of 1025 bytes", func(c *store.Credential) { c.Description = strings.Repeat("d", 1025) }},
		{"description with a new line", func(c *store.Credential) { c.Description = "seal\nfake line" }},
		{"description with an escape", func(c *store.Credential) { c.Description = "seal\x1b[2J" }},
		{"description with NUL", func(c *store.Credential) { c.Description = "seal\x00" }},
		{"description not UTF-8", func(c *store.Credential) { c.Description = "seal\xff" }},
	}
	for _, tc := range invalid {
		t.Run("invalid/"+tc.name, func(t *testing.T) {
			c := newCredential("bad", "alice")
			tc.edit(c)
			err := s.Update(context.Background(), func(tx store.Tx) error { return tx.CreateCredential(c) })
			wantErr(t, "CreateCredential", err, store.ErrInvalid)
		})
	}
	if got := len(listCredentials(t, s, "", "", 0)); got != len(valid) {
		t.Errorf("%d credentials stored, want %d", got, len(valid))
	}
	if got := len(listCredentials(t, s, "alice", "", 0)); got != len(valid) {
		t.Errorf("%d credentials indexed for alice, want %d", got, len(valid))
	}
}

func testInvalidProofs(t *testing.T, s store.Store) {
	createUsers(t, s, "alice")
	content := []byte("%PDF-1.7")
	for _, tc := range []struct {
		name string
		p    store.Proof
	}{
		{"oversized", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPDF}, Content: make([]byte, store.MaxProofSize+1)}},
		{"empty content", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPDF}}},
		{"HTML", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: "text/html"}, Content: content}},
		{"GIF", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: "image/gif"}, Content: content}},
		{"content type with parameters", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: "application/pdf; charset=x"}, Content: content}},
		{"no content type", store.Proof{ProofRef: store.ProofRef{ID: "p"}, Content: content}},
		{"empty ID", store.Proof{ProofRef: store.ProofRef{ContentType: store.ProofPDF}, Content: content}},
		{"ID with slash and space", store.Proof{ProofRef: store.ProofRef{ID: "../ x", ContentType: store.ProofPDF}, Content: content}},
		{"size mismatch", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPDF, Size: 3}, Content: content}},
		{"digest mismatch", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPDF, SHA256: store.ProofDigest([]byte("other"))}, Content: content}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Update(context.Background(), func(tx store.Tx) error { return tx.PutProof("alice", tc.p) })
			wantErr(t, "PutProof", err, store.ErrInvalid)
		})
	}
	if u := getUser(t, s, "alice"); len(u.Proofs) != 0 {
		t.Errorf("refused proofs were recorded: %+v", u.Proofs)
	}
}

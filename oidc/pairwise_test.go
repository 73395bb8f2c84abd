package oidc_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

func TestLoadSalt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "pairwise.salt")
	salt, err := oidc.LoadSalt(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(salt) != oidc.SaltSize || fi.Size() != oidc.SaltSize || fi.Mode().Perm() != 0o600 {
		t.Errorf("salt %d bytes, file %d bytes mode %v; want 32, 32, 0600", len(salt), fi.Size(), fi.Mode().Perm())
	}
	again, err := oidc.LoadSalt(path)
	if err != nil || !bytes.Equal(again, salt) {
		t.Errorf("second LoadSalt = %x, %v; want the same salt (never rotated)", again, err)
	}

	bad := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"too short", make([]byte, 16), 0o600},
		{"too long", make([]byte, 33), 0o600},
		{"empty", nil, 0o600},
		{"group readable", make([]byte, 32), 0o640},
		{"world readable", make([]byte, 32), 0o604},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "salt")
			if err := os.WriteFile(p, tt.data, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			if _, err := oidc.LoadSalt(p); err == nil {
				t.Error("LoadSalt accepted it")
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, tt.data) {
				t.Error("LoadSalt changed the file")
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		if _, err := oidc.LoadSalt(t.TempDir()); err == nil {
			t.Error("LoadSalt accepted a directory")
		}
	})
}

func TestSector(t *testing.T) {
	tests := []struct {
		name   string
		uris   []string
		sector string
		want   string
	}{
		{"one host", []string{"https://rp.example.com/cb"}, "", "rp.example.com"},
		{"one host, two paths and ports", []string{"https://RP.example.com/cb", "https://rp.example.com:8443/other"}, "", "rp.example.com"},
		{"sector identifier wins", []string{"https://a.example.com/cb", "https://b.example.com/cb"}, "example.com", "example.com"},
		{"sector identifier URL", []string{"https://a.example.com/cb"}, "https://Sector.example.com/uris.json", "sector.example.com"},
		{"native app with sector", []string{"com.example.app:/oauth"}, "app.example.com", "app.example.com"},
		{"several hosts", []string{"https://a.example.com/cb", "https://b.example.com/cb"}, "", ""},
		{"private-use scheme", []string{"com.example.app:/oauth"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := oidc.Sector(&store.Client{ID: "c", RedirectURIs: tt.uris, SectorIdentifier: tt.sector})
			if tt.want == "" {
				if !errors.Is(err, oidc.ErrSector) {
					t.Errorf("Sector = %q, %v; want ErrSector", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Sector = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// Item 18 of reference/oidc.md §8: pairwise subjects are the same within a
// sector, different across sectors, and stable across restarts (the salt
// file is read again).
func TestItem18Pairwise(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pairwise.salt")
	salt, err := oidc.LoadSalt(path)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := oidc.NewPairwise(salt)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := "u1-alice-id", "u2-bob-id"
	a1 := pw.Subject("rp.example.com", alice)
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`).MatchString(a1) {
		t.Errorf("sub %q is not 43 base64url characters", a1)
	}
	if pw.Subject("rp.example.com", alice) != a1 {
		t.Error("same sector and user gave two subjects")
	}
	if pw.Subject("other.example.com", alice) == a1 {
		t.Error("two sectors share a subject")
	}
	if pw.Subject("rp.example.com", bob) == a1 {
		t.Error("two users share a subject")
	}
	// Length prefixes: moving bytes between sector and user changes the sub.
	if pw.Subject("ab", "c") == pw.Subject("a", "bc") {
		t.Error("ambiguous concatenation")
	}
	// Restart: the salt is read back from the file.
	salt2, err := oidc.LoadSalt(path)
	if err != nil {
		t.Fatal(err)
	}
	pw2, _ := oidc.NewPairwise(salt2)
	if pw2.Subject("rp.example.com", alice) != a1 {
		t.Error("subject changed after a restart")
	}
	// Another salt (another installation) gives other subjects.
	other, _ := oidc.NewPairwise(bytes.Repeat([]byte{1}, oidc.SaltSize))
	if other.Subject("rp.example.com", alice) == a1 {
		t.Error("subject does not depend on the salt")
	}
	if _, err := oidc.NewPairwise(make([]byte, 16)); err == nil {
		t.Error("NewPairwise accepted a short salt")
	}

	// Clients: two of one sector agree, a third of another sector differs.
	f := newFixture(t)
	user := &store.User{ID: alice}
	sub := func(c *store.Client) string {
		s, err := f.p.Subject(c, user)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	c1 := &store.Client{ID: "c1", RedirectURIs: []string{"https://rp.example.com/a"}}
	c2 := &store.Client{ID: "c2", RedirectURIs: []string{"https://rp.example.com/b"}}
	c3 := &store.Client{ID: "c3", RedirectURIs: []string{"https://other.example.org/cb"}}
	c4 := &store.Client{ID: "c4", RedirectURIs: []string{"https://x.example.net/cb"}, SectorIdentifier: "rp.example.com"}
	if sub(c1) != sub(c2) || sub(c1) != sub(c4) {
		t.Error("clients of one sector got different subjects")
	}
	if sub(c1) == sub(c3) {
		t.Error("clients of two sectors got the same subject")
	}
}

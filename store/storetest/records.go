package storetest

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// CRUD per record kind.

func testUsers(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := newUser(t, "alice")
	update(t, s, func(tx store.Tx) error { return tx.CreateUser(alice) })
	if alice.CreatedAt.IsZero() || !alice.UpdatedAt.Equal(alice.CreatedAt) {
		t.Errorf("CreateUser set CreatedAt %v, UpdatedAt %v", alice.CreatedAt, alice.UpdatedAt)
	}
	if d := equalUser(getUser(t, s, "alice"), alice); d != "" {
		t.Errorf("User(alice): %s", d)
	}

	err := s.Update(ctx, func(tx store.Tx) error { return tx.CreateUser(newUser(t, "alice")) })
	wantErr(t, "second CreateUser", err, store.ErrAlreadyExists)

	createUsers(t, s, "carol", "bob")
	view(t, s, func(tx store.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		var names []string
		for _, u := range users {
			names = append(names, u.Username)
		}
		if want := []string{"alice", "bob", "carol"}; !slices.Equal(names, want) {
			t.Errorf("Users() = %v, want %v", names, want)
		}
		_, err = tx.User("nobody")
		wantErr(t, "User(nobody)", err, store.ErrNotFound)
		return nil
	})

	// Read-modify-write with PutUser.
	update(t, s, func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		u.Status = store.UserDisabled
		u.FailedPasswords, u.PasswordLocked = 5, true
		// A timed lock is read back in UTC, as every time is.
		u.PasswordLockedUntil = time.Date(2026, 11, 27, 19, 30, 0, 5, time.FixedZone("CET", 3600))
		u.PasswordLockouts = 3
		u.FailedPINs, u.PINLocked = 2, false
		u.PINHash = ""
		u.TOTPSecret = ""
		u.Email, u.EmailVerified = "ann@example.org", false
		u.Claims["nationality"] = "NL"
		// An open enrollment link: its fingerprint and expiry (UTC).
		u.EnrollmentHash = store.Fingerprint("alice~link")
		u.EnrollmentExpires = time.Date(2026, 11, 28, 19, 30, 0, 5, time.FixedZone("CET", 3600))
		u.CreatedAt = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC) // ignored
		if err := tx.PutUser(u); err != nil {
			return err
		}
		alice.Status = store.UserDisabled
		alice.FailedPasswords, alice.PasswordLocked = 5, true
		alice.PasswordLockedUntil, alice.PasswordLockouts = time.Date(2026, 11, 27, 18, 30, 0, 5, time.UTC), 3
		alice.FailedPINs = 2
		alice.PINHash, alice.TOTPSecret = "", ""
		alice.SecretGeneration = 1 // the PIN hash changed
		alice.Email, alice.EmailVerified = "ann@example.org", false
		alice.Claims["nationality"] = "NL"
		alice.EnrollmentHash = store.Fingerprint("alice~link")
		alice.EnrollmentExpires = time.Date(2026, 11, 28, 18, 30, 0, 5, time.UTC)
		alice.UpdatedAt = u.UpdatedAt
		if !u.CreatedAt.Equal(alice.CreatedAt) {
			t.Errorf("PutUser changed CreatedAt to %v", u.CreatedAt)
		}
		return nil
	})
	if d := equalUser(getUser(t, s, "alice"), alice); d != "" {
		t.Errorf("User(alice) after PutUser: %s", d)
	}

	err = s.Update(ctx, func(tx store.Tx) error { return tx.PutUser(newUser(t, "nobody")) })
	wantErr(t, "PutUser(nobody)", err, store.ErrNotFound)

	// A broken enrollment link is refused: a short hash, a hash without
	// its expiry.
	for name, broken := range map[string]func(u *store.User){
		"short enrollment hash":     func(u *store.User) { u.EnrollmentHash = []byte("short") },
		"enrollment without expiry": func(u *store.User) { u.EnrollmentExpires = time.Time{} },
	} {
		err = s.Update(ctx, func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			broken(u)
			return tx.PutUser(u)
		})
		wantErr(t, "PutUser with a "+name, err, store.ErrInvalid)
	}

	other := newUser(t, "alice") // same username, other ID
	err = s.Update(ctx, func(tx store.Tx) error { return tx.PutUser(other) })
	wantErr(t, "PutUser with a changed ID", err, store.ErrInvalid)
}

func testClients(t *testing.T, s store.Store) {
	ctx := context.Background()
	rp := newClient("rp")
	update(t, s, func(tx store.Tx) error { return tx.CreateClient(rp) })
	if rp.CreatedAt.IsZero() || !rp.UpdatedAt.Equal(rp.CreatedAt) {
		t.Errorf("CreateClient set CreatedAt %v, UpdatedAt %v", rp.CreatedAt, rp.UpdatedAt)
	}
	view(t, s, func(tx store.Tx) error {
		c, err := tx.Client("rp")
		if err != nil {
			return err
		}
		if d := equalClient(c, rp); d != "" {
			t.Errorf("Client(rp): %s", d)
		}
		if !store.CheckSecret(c.SecretHash, "secret-of-rp") {
			t.Error("stored secret hash does not check")
		}
		return nil
	})

	err := s.Update(ctx, func(tx store.Tx) error { return tx.CreateClient(newClient("rp")) })
	wantErr(t, "second CreateClient", err, store.ErrAlreadyExists)

	update(t, s, func(tx store.Tx) error {
		for _, id := range []string{"zz", "mm", "aa"} {
			if err := tx.CreateClient(newClient(id)); err != nil {
				return err
			}
		}
		return nil
	})

	update(t, s, func(tx store.Tx) error {
		c, err := tx.Client("rp")
		if err != nil {
			return err
		}
		c.Name = "Renamed"
		c.RedirectURIs = []string{"https://new.example.com/cb"}
		c.Scopes = []string{"openid", "email"}
		c.SectorIdentifier = ""
		c.RequirePKCE = false
		c.IDTokenSignedResponseAlg = store.JWSPS256
		c.SecretHash = store.HashSecret("rotated")
		if err := tx.PutClient(c); err != nil {
			return err
		}
		rp = c
		return nil
	})
	view(t, s, func(tx store.Tx) error {
		c, err := tx.Client("rp")
		if err != nil {
			return err
		}
		if d := equalClient(c, rp); d != "" {
			t.Errorf("Client(rp) after PutClient: %s", d)
		}
		clients, err := tx.Clients()
		if err != nil {
			return err
		}
		var ids []string
		for _, c := range clients {
			ids = append(ids, c.ID)
		}
		if want := []string{"aa", "mm", "rp", "zz"}; !slices.Equal(ids, want) {
			t.Errorf("Clients() = %v, want %v", ids, want)
		}
		return nil
	})

	update(t, s, func(tx store.Tx) error { return tx.DeleteClient("mm") })
	for _, tc := range []struct {
		name string
		fn   func(tx store.Tx) error
	}{
		{"Client(mm) after delete", func(tx store.Tx) error { _, err := tx.Client("mm"); return err }},
		{"Client(missing)", func(tx store.Tx) error { _, err := tx.Client("missing"); return err }},
		{"DeleteClient(mm) again", func(tx store.Tx) error { return tx.DeleteClient("mm") }},
		{"PutClient(missing)", func(tx store.Tx) error { return tx.PutClient(newClient("missing")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.name, s.Update(ctx, tc.fn), store.ErrNotFound)
		})
	}
}

// testCredentialAlgorithms: every credential algorithm is stored and
// read back as written, and stays immutable (an EC key does not turn into
// an RSA one).
func testCredentialAlgorithms(t *testing.T, s store.Store) {
	ctx := context.Background()
	createUsers(t, s, "alice")
	for _, alg := range store.Algorithms() {
		t.Run(alg, func(t *testing.T) {
			c := newCredential("alg-"+alg, "alice")
			c.Algorithm, c.KeyBits = alg, store.AlgorithmKeyBits(alg)
			update(t, s, func(tx store.Tx) error { return tx.CreateCredential(c) })
			got := getCredential(t, s, c.ID)
			if d := equalCredential(got, c); d != "" || got.Algorithm != alg || got.KeyBits != c.KeyBits {
				t.Fatalf("Credential(%s): %s (algorithm %q, %d bits)", c.ID, d, got.Algorithm, got.KeyBits)
			}
			other, bits := store.AlgECP256, 256
			if alg == other {
				other, bits = store.AlgRSA2048, 2048
			}
			err := s.Update(ctx, func(tx store.Tx) error {
				c, err := tx.Credential("alg-" + alg)
				if err != nil {
					return err
				}
				c.Algorithm, c.KeyBits = other, bits
				return tx.PutCredential(c)
			})
			wantErr(t, "algorithm changes to "+other, err, store.ErrInvalid)
		})
	}
}

func testCredentials(t *testing.T, s store.Store) {
	ctx := context.Background()
	createUsers(t, s, "alice")
	cred := newCredential("c1", "alice")
	update(t, s, func(tx store.Tx) error { return tx.CreateCredential(cred) })
	if cred.CreatedAt.IsZero() || !cred.UpdatedAt.Equal(cred.CreatedAt) {
		t.Errorf("CreateCredential set CreatedAt %v, UpdatedAt %v", cred.CreatedAt, cred.UpdatedAt)
	}
	if d := equalCredential(getCredential(t, s, "c1"), cred); d != "" {
		t.Errorf("Credential(c1): %s", d)
	}

	err := s.Update(ctx, func(tx store.Tx) error { return tx.CreateCredential(newCredential("c1", "alice")) })
	wantErr(t, "second CreateCredential", err, store.ErrAlreadyExists)

	// Certificate import: pending → enabled.
	update(t, s, func(tx store.Tx) error {
		c, err := tx.Credential("c1")
		if err != nil {
			return err
		}
		c.Chain = [][]byte{[]byte("leaf DER"), []byte("CA DER")}
		c.Status = store.CredentialEnabled
		c.Description = "enabled"
		if err := tx.PutCredential(c); err != nil {
			return err
		}
		cred = c
		return nil
	})
	if d := equalCredential(getCredential(t, s, "c1"), cred); d != "" {
		t.Errorf("Credential(c1) after PutCredential: %s", d)
	}
	// Disabled by its owner, then enabled again: DisabledBy round-trips
	// and is cleared.
	for _, by := range []string{store.DisabledByOwner, ""} {
		update(t, s, func(tx store.Tx) error {
			c, err := tx.Credential("c1")
			if err != nil {
				return err
			}
			c.Status, c.DisabledBy = store.CredentialDisabled, by
			if by == "" {
				c.Status = store.CredentialEnabled
			}
			if err := tx.PutCredential(c); err != nil {
				return err
			}
			cred = c
			return nil
		})
		if d := equalCredential(getCredential(t, s, "c1"), cred); d != "" {
			t.Errorf("Credential(c1) with DisabledBy %q: %s", by, d)
		}
	}

	for _, tc := range []struct {
		name string
		fn   func(tx store.Tx) error
		want error
	}{
		{"Credential(missing)", func(tx store.Tx) error { _, err := tx.Credential("missing"); return err }, store.ErrNotFound},
		{"PutCredential(missing)", func(tx store.Tx) error { return tx.PutCredential(newCredential("missing", "alice")) }, store.ErrNotFound},
		{"owner does not exist", func(tx store.Tx) error { return tx.CreateCredential(newCredential("c2", "nobody")) }, store.ErrInvalid},
		{"KeyID changes", func(tx store.Tx) error {
			c, _ := tx.Credential("c1")
			c.KeyID = []byte("another key")
			return tx.PutCredential(c)
		}, store.ErrInvalid},
		{"algorithm changes", func(tx store.Tx) error {
			c, _ := tx.Credential("c1")
			c.Algorithm, c.KeyBits = store.AlgRSA4096, 4096
			return tx.PutCredential(c)
		}, store.ErrInvalid},
		{"PutCredential to a missing owner", func(tx store.Tx) error {
			c, _ := tx.Credential("c1")
			c.Owner = "nobody"
			return tx.PutCredential(c)
		}, store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.name, s.Update(ctx, tc.fn), tc.want)
		})
	}
	if d := equalCredential(getCredential(t, s, "c1"), cred); d != "" {
		t.Errorf("Credential(c1) after refused writes: %s", d)
	}
	if got := credentialIDs(listCredentials(t, s, "nobody", "", 0)); len(got) != 0 {
		t.Errorf("Credentials(nobody) = %v after refused writes", got)
	}
}

// Proofs.

func testProofs(t *testing.T, s store.Store) {
	ctx := context.Background()
	createUsers(t, s, "alice")
	pdf := []byte("%PDF-1.7 passport scan")
	in := store.Proof{ProofRef: store.ProofRef{ID: "passport", ContentType: store.ProofPDF}, Content: pdf}
	update(t, s, func(tx store.Tx) error { return tx.PutProof("alice", in) })
	in.Content[0] = 'X' // the store kept its own copy
	pdf = []byte("%PDF-1.7 passport scan")

	wantRef := store.ProofRef{ID: "passport", ContentType: store.ProofPDF, Size: int64(len(pdf)), SHA256: store.ProofDigest(pdf)}
	view(t, s, func(tx store.Tx) error {
		p, err := tx.Proof("alice", "passport")
		if err != nil {
			return err
		}
		if p.ProofRef != wantRef || !bytes.Equal(p.Content, pdf) {
			t.Errorf("Proof = %+v %q, want %+v %q", p.ProofRef, p.Content, wantRef, pdf)
		}
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if !slices.Equal(u.Proofs, []store.ProofRef{wantRef}) {
			t.Errorf("User.Proofs = %+v, want [%+v]", u.Proofs, wantRef)
		}
		return nil
	})

	// Replace the same ID, add another, and check the maximum size fits.
	png := []byte("\x89PNG new scan")
	big := bytes.Repeat([]byte{0xff}, store.MaxProofSize)
	update(t, s, func(tx store.Tx) error {
		if err := tx.PutProof("alice", store.Proof{ProofRef: store.ProofRef{ID: "passport", ContentType: store.ProofPNG}, Content: png}); err != nil {
			return err
		}
		return tx.PutProof("alice", store.Proof{
			ProofRef: store.ProofRef{ID: "selfie", ContentType: store.ProofJPEG, Size: int64(len(big)), SHA256: store.ProofDigest(big)},
			Content:  big,
		})
	})
	view(t, s, func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		want := []store.ProofRef{
			{ID: "passport", ContentType: store.ProofPNG, Size: int64(len(png)), SHA256: store.ProofDigest(png)},
			{ID: "selfie", ContentType: store.ProofJPEG, Size: int64(len(big)), SHA256: store.ProofDigest(big)},
		}
		if !slices.Equal(u.Proofs, want) {
			t.Errorf("User.Proofs = %+v, want %+v", u.Proofs, want)
		}
		p, err := tx.Proof("alice", "passport")
		if err != nil {
			return err
		}
		if !bytes.Equal(p.Content, png) {
			t.Errorf("replaced proof content = %q, want %q", p.Content, png)
		}
		p, err = tx.Proof("alice", "selfie")
		if err != nil {
			return err
		}
		if !bytes.Equal(p.Content, big) {
			t.Errorf("10 MiB proof did not round-trip (%d bytes)", len(p.Content))
		}
		return nil
	})

	// PutUser cannot rewrite the proof list.
	update(t, s, func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		u.Proofs = []store.ProofRef{{ID: "forged", ContentType: store.ProofPDF, Size: 1, SHA256: "00"}}
		return tx.PutUser(u)
	})
	if got := getUser(t, s, "alice").Proofs; len(got) != 2 || got[0].ID != "passport" || got[1].ID != "selfie" {
		t.Errorf("PutUser changed User.Proofs to %+v", got)
	}

	for _, tc := range []struct {
		name string
		fn   func(tx store.Tx) error
	}{
		{"Proof of missing user", func(tx store.Tx) error { _, err := tx.Proof("nobody", "passport"); return err }},
		{"missing Proof", func(tx store.Tx) error { _, err := tx.Proof("alice", "forged"); return err }},
		{"PutProof for missing user", func(tx store.Tx) error { return tx.PutProof("nobody", in) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.name, s.Update(ctx, tc.fn), store.ErrNotFound)
		})
	}
}

// testCredentialModes: a credential's multisign and authMode are stored
// and read back; a credential written without them (as every record
// written before they existed) reads as multisign 1 and oauth2code; values
// out of range are refused.
func testCredentialModes(t *testing.T, s store.Store) {
	ctx := context.Background()
	createUsers(t, s, "alice")
	plain := newCredential("plain", "alice")
	batch := newCredential("batch", "alice")
	batch.Multisign, batch.AuthMode = 10, store.AuthExplicit
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateCredential(plain); err != nil {
			return err
		}
		return tx.CreateCredential(batch)
	})
	for _, tc := range []struct {
		id   string
		n    int
		mode store.AuthMode
	}{{"plain", 1, store.AuthOAuth2Code}, {"batch", 10, store.AuthExplicit}} {
		got := getCredential(t, s, tc.id)
		if got.Multisign != tc.n || got.AuthMode != tc.mode {
			t.Errorf("Credential(%s): multisign %d, authMode %q; want %d, %q", tc.id, got.Multisign, got.AuthMode, tc.n, tc.mode)
		}
	}
	var listed []store.Credential
	view(t, s, func(tx store.Tx) (err error) { listed, err = tx.Credentials("alice", "", 10); return err })
	for _, c := range listed {
		if c.Multisign < 1 || c.AuthMode == "" {
			t.Errorf("Credentials: %s has multisign %d, authMode %q", c.ID, c.Multisign, c.AuthMode)
		}
	}
	// Changing both later (the admin's set-mode) is a plain PutCredential.
	update(t, s, func(tx store.Tx) error {
		c, err := tx.Credential("plain")
		if err != nil {
			return err
		}
		c.Multisign, c.AuthMode = store.MaxMultisign, store.AuthExplicit
		return tx.PutCredential(c)
	})
	if got := getCredential(t, s, "plain"); got.Multisign != store.MaxMultisign || got.AuthMode != store.AuthExplicit {
		t.Errorf("after PutCredential: multisign %d, authMode %q", got.Multisign, got.AuthMode)
	}
	for _, tc := range []struct {
		name string
		n    int
		mode store.AuthMode
	}{
		{"negative multisign", -1, ""},
		{"multisign over the cap", store.MaxMultisign + 1, ""},
		{"implicit authMode", 1, "implicit"},
		{"unknown authMode", 1, "OAUTH2CODE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCredential("bad", "alice")
			c.Multisign, c.AuthMode = tc.n, tc.mode
			wantErr(t, "CreateCredential", s.Update(ctx, func(tx store.Tx) error { return tx.CreateCredential(c) }), store.ErrInvalid)
			wantErr(t, "PutCredential", s.Update(ctx, func(tx store.Tx) error {
				c.ID = "batch"
				c.KeyID = []byte("key-batch")
				return tx.PutCredential(c)
			}), store.ErrInvalid)
		})
	}
	if got := getCredential(t, s, "batch"); got.Multisign != 10 || got.AuthMode != store.AuthExplicit {
		t.Errorf("after refused writes: multisign %d, authMode %q", got.Multisign, got.AuthMode)
	}
}

package oidc

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/signd/signd/store"
)

// SaltSize is the size of the pairwise salt in bytes.
const SaltSize = 32

// ErrSector is returned by Sector for a client whose pairwise sector cannot
// be derived: redirect URIs on several hosts (or without a host) and no
// sector identifier.
var ErrSector = errors.New("oidc: the client needs a sector identifier")

// LoadSalt reads the pairwise salt from path, creating it (mode 0600, 32
// random bytes, parent directory 0700) when it does not exist. An existing
// file must be exactly SaltSize bytes and not readable or writable by group
// or others; anything else is refused, never repaired: a changed salt
// would change every subject.
func LoadSalt(path string) ([]byte, error) {
	salt, err := readSalt(path)
	if errors.Is(err, os.ErrNotExist) {
		return createSalt(path)
	}
	return salt, err
}

func readSalt(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s: %w", path, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s has mode %04o: it must not be accessible to group or others (chmod 600)", path, fi.Mode().Perm())
	case fi.Size() != SaltSize:
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s has %d bytes, want %d: it is not a signd salt (never replace or rotate it)", path, fi.Size(), SaltSize)
	}
	salt := make([]byte, SaltSize)
	if _, err := io.ReadFull(f, salt); err != nil {
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s: %w", path, err)
	}
	return salt, nil
}

func createSalt(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("oidc.pairwise_salt_file: %w", err)
	}
	salt := make([]byte, SaltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	// O_EXCL: if another process created it meanwhile, use that one.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return readSalt(path)
	}
	if err != nil {
		return nil, fmt.Errorf("oidc.pairwise_salt_file: %w", err)
	}
	if _, err := f.Write(salt); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("oidc.pairwise_salt_file %s: %w", path, err)
	}
	return salt, nil
}

// Pairwise computes pairwise subject identifiers (OpenID Connect Core
// §8.1): sub = base64url(SHA-256(len ‖ sector ‖ len ‖ user ID ‖ salt)),
// each length a 4-byte big-endian byte count, so no two (sector, user)
// pairs share an input. The user ID is the stable random store.User.ID,
// never the username (which an admin could reuse).
type Pairwise struct {
	salt []byte
}

// NewPairwise returns a Pairwise over a SaltSize-byte secret salt.
func NewPairwise(salt []byte) (*Pairwise, error) {
	if len(salt) != SaltSize {
		return nil, fmt.Errorf("oidc: pairwise salt must be %d bytes", SaltSize)
	}
	return &Pairwise{salt: append([]byte(nil), salt...)}, nil
}

// Subject returns the pairwise sub of a user in a sector: 43 base64url
// characters.
func (p *Pairwise) Subject(sector, userID string) string {
	h := sha256.New()
	var n [4]byte
	for _, part := range []string{sector, userID} {
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	h.Write(p.salt)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Sector returns the pairwise sector of a client: its SectorIdentifier
// (the host when it is given as a URL), otherwise the one host all its
// redirect URIs share, lower-cased and without port. A client whose
// redirect URIs have several hosts, or none (private-use schemes), needs a
// sector identifier: ErrSector.
func Sector(c *store.Client) (string, error) {
	if s := c.SectorIdentifier; s != "" {
		if strings.Contains(s, "://") {
			u, err := url.Parse(s)
			if err != nil || u.Hostname() == "" {
				return "", fmt.Errorf("%w: client %q: sector identifier %q has no host", ErrSector, c.ID, s)
			}
			return strings.ToLower(u.Hostname()), nil
		}
		return strings.ToLower(s), nil
	}
	host := ""
	for _, ru := range c.RedirectURIs {
		u, err := url.Parse(ru)
		if err != nil || u.Hostname() == "" {
			return "", fmt.Errorf("%w: client %q: redirect URI %q has no host", ErrSector, c.ID, ru)
		}
		h := strings.ToLower(u.Hostname())
		if host != "" && h != host {
			return "", fmt.Errorf("%w: client %q: redirect URIs on several hosts (%s, %s)", ErrSector, c.ID, host, h)
		}
		host = h
	}
	if host == "" {
		return "", fmt.Errorf("%w: client %q has no redirect URI", ErrSector, c.ID)
	}
	return host, nil
}

// Subject returns the pairwise sub of user for client.
func (p *Provider) Subject(client *store.Client, user *store.User) (string, error) {
	sector, err := Sector(client)
	if err != nil {
		return "", err
	}
	return p.Subjects.Subject(sector, user.ID), nil
}

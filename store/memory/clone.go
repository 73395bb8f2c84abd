package memory

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// Deep copies of the records, normalized as bolt's JSON records read back:
// times in UTC without a monotonic reading, and slices and maps that bolt
// stores with omitempty nil when empty. The store keeps one copy and hands
// out another, so neither side aliases the other; the normalization is
// idempotent, so the same function serves both ways.

func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// cloneBytesList copies a list of byte strings; an element keeps its own
// nil or empty form, as it does in JSON.
func cloneBytesList(l [][]byte) [][]byte {
	if len(l) == 0 {
		return nil
	}
	out := make([][]byte, len(l))
	for i, b := range l {
		out[i] = bytes.Clone(b)
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func utc(t time.Time) time.Time { return t.UTC() }

func cloneUser(u *store.User) *store.User {
	c := *u
	c.PasswordLockedUntil = utc(u.PasswordLockedUntil)
	c.Claims = cloneMap(u.Claims)
	if len(u.Proofs) == 0 {
		c.Proofs = nil
	} else {
		c.Proofs = slices.Clone(u.Proofs) // ProofRef holds values only
	}
	return &c
}

func cloneClient(cl *store.Client) *store.Client {
	c := *cl
	c.RedirectURIs = slices.Clone(cl.RedirectURIs) // never empty (validated)
	c.Scopes = cloneStrings(cl.Scopes)
	return &c
}

func cloneCredential(cr *store.Credential) *store.Credential {
	c := *cr
	c.KeyID = bytes.Clone(cr.KeyID)
	c.Chain = cloneBytesList(cr.Chain)
	c.SetDefaults()
	return &c
}

func cloneToken(t *store.Token) *store.Token {
	c := *t
	c.Hash = bytes.Clone(t.Hash)
	c.Scopes = cloneStrings(t.Scopes)
	c.CodeHash = cloneBytes(t.CodeHash)
	c.Hashes = cloneBytesList(t.Hashes)
	c.AuthTime, c.RequestedAt, c.ExpiresAt = utc(t.AuthTime), utc(t.RequestedAt), utc(t.ExpiresAt)
	c.RotatedAt = utc(t.RotatedAt)
	c.Consented = t.Consented.Clone()
	return &c
}

func cloneGrant(g store.Grant) store.Grant {
	g.Scopes = cloneStrings(g.Scopes)
	g.Hashes = cloneBytesList(g.Hashes)
	g.Params = cloneMap(g.Params)
	g.AuthTime, g.RequestedAt = utc(g.AuthTime), utc(g.RequestedAt)
	g.Consented = g.Consented.Clone()
	return g
}

func cloneRequest(r *store.AuthRequest) *store.AuthRequest {
	c := *r
	c.Hash = bytes.Clone(r.Hash)
	c.Grant = cloneGrant(r.Grant)
	c.CSRFHash = bytes.Clone(r.CSRFHash)
	c.BindingHash = bytes.Clone(r.BindingHash)
	c.ConsentShownAt, c.ExpiresAt = utc(r.ConsentShownAt), utc(r.ExpiresAt)
	return &c
}

func cloneCode(code *store.AuthCode) *store.AuthCode {
	c := *code
	c.Hash = bytes.Clone(code.Hash)
	c.Grant = cloneGrant(code.Grant)
	c.ExpiresAt, c.RedeemedAt = utc(code.ExpiresAt), utc(code.RedeemedAt)
	return &c
}

func cloneSession(s *store.Session) *store.Session {
	c := *s
	c.Hash = bytes.Clone(s.Hash)
	c.AuthTime, c.ExpiresAt = utc(s.AuthTime), utc(s.ExpiresAt)
	return &c
}

func cloneSigningKey(k *store.SigningKey) *store.SigningKey {
	c := *k
	c.KeyID = bytes.Clone(k.KeyID)
	c.PublicKey = bytes.Clone(k.PublicKey)
	c.CreatedAt = k.CreatedAt.UTC().Round(0)
	c.ActivatedAt = k.ActivatedAt.UTC().Round(0)
	c.RetiredAt = k.RetiredAt.UTC().Round(0)
	return &c
}

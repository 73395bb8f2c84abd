package admin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/signd/signd/store"
)

// knownScopes are the scopes a client may be registered for. The OIDC
// namespaced scopes are checked by suffix, the namespace being configurable.
var knownScopes = []string{"service", "credential", "openid", "email"}

var knownScopeSuffixes = []string{".personal_info", ".id_number", ".proof"}

func validScope(s string) bool {
	if slices.Contains(knownScopes, s) {
		return true
	}
	for _, suf := range knownScopeSuffixes {
		if strings.HasSuffix(s, suf) && len(s) > len(suf) && printable(s) && !strings.ContainsAny(s, " \"\\") {
			return true
		}
	}
	return false
}

func clientView(c *store.Client) *ClientView {
	return &ClientView{
		ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes,
		SectorIdentifier: c.SectorIdentifier, RequirePKCE: c.RequirePKCE, IDTokenAlg: c.IDTokenSignedResponseAlg,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// NewClientSecret returns 256 random bits, base64url without padding.
func NewClientSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// AddClient implements Service.
func (l *Local) AddClient(ctx context.Context, by Principal, req AddClientRequest) (*AddClientResult, error) {
	if err := l.allow(ctx, by, "AddClient"); err != nil {
		return nil, err
	}
	res := &AddClientResult{}
	secret := req.Secret
	if secret == "" {
		var err error
		if secret, err = NewClientSecret(); err != nil {
			return nil, l.fail("client", err)
		}
		res.GeneratedSecret = secret
	} else if len(secret) < 32 || len(secret) > 512 || !printable(secret) {
		// Client secrets are hashed with plain SHA-256, which is only safe
		// for high-entropy secrets: refuse short ones.
		return nil, errorf(KindInvalid, "client secret must be 32 to 512 printable bytes (leave --secret-file out to generate one)")
	}
	if len(req.Name) > maxNameLen || !printable(req.Name) {
		return nil, errorf(KindInvalid, "client name must be at most %d printable characters", maxNameLen)
	}
	scopes := req.Scopes
	if len(scopes) == 0 {
		scopes = []string{"service", "credential"}
	}
	for _, s := range scopes {
		if !validScope(s) {
			return nil, errorf(KindInvalid, "scope %q is not one signd serves (service, credential, openid, email, <ns>.personal_info, <ns>.id_number, <ns>.proof)", s)
		}
	}
	if dup := firstDuplicate(req.RedirectURIs); dup != "" {
		return nil, errorf(KindInvalid, "redirect URI %q given twice", dup)
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	c := &store.Client{
		ID: req.ID, Name: name, SecretHash: store.HashSecret(secret),
		RedirectURIs: req.RedirectURIs, Scopes: slices.Compact(slices.Sorted(slices.Values(scopes))),
		SectorIdentifier: req.SectorIdentifier, RequirePKCE: req.RequirePKCE,
		IDTokenSignedResponseAlg: req.IDTokenAlg,
	}
	if err := checkSector(c); err != nil {
		return nil, err
	}
	if err := l.checkIDTokenAlg(ctx, c); err != nil {
		return nil, err
	}
	err := l.Store.Update(ctx, func(tx store.Tx) (err error) {
		if err := tx.CreateClient(c); err != nil {
			return err
		}
		c, err = tx.Client(req.ID)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", req.ID), err)
	}
	res.Client = *clientView(c)
	return res, nil
}

func firstDuplicate(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// ListClients implements Service.
func (l *Local) ListClients(ctx context.Context, by Principal) ([]ClientView, error) {
	if err := l.allow(ctx, by, "ListClients"); err != nil {
		return nil, err
	}
	var cs []store.Client
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		cs, err = tx.Clients()
		return err
	})
	if err != nil {
		return nil, l.fail("list clients", err)
	}
	out := make([]ClientView, 0, len(cs))
	for i := range cs {
		out = append(out, *clientView(&cs[i]))
	}
	return out, nil
}

// ShowClient implements Service.
func (l *Local) ShowClient(ctx context.Context, by Principal, id string) (*ClientView, error) {
	if err := l.allow(ctx, by, "ShowClient"); err != nil {
		return nil, err
	}
	var c *store.Client
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.Client(id)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", id), err)
	}
	return clientView(c), nil
}

// RemoveClient implements Service: it deletes the client and revokes its
// access tokens, SADs, codes and pending requests in one transaction.
func (l *Local) RemoveClient(ctx context.Context, by Principal, id string) (*RemoveResult, error) {
	if err := l.admit(ctx, by, "RemoveClient", NameRequest{Name: id}); err != nil {
		return nil, err
	}
	var r store.Revoked
	err := l.Store.Update(ctx, func(tx store.Tx) (err error) {
		if err := tx.DeleteClient(id); err != nil {
			return err
		}
		r, err = tx.RevokeClient(id)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", id), err)
	}
	res := &RemoveResult{Removed: id, Revoked: *revokedView(r)}
	l.logger().Info("client removed", "client_id", id, "revoked", &res.Revoked)
	return res, nil
}

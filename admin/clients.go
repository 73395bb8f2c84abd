package admin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/store"
)

// NewClientSecret returns 256 random bits, base64url without padding.
func NewClientSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// AddClient implements Service.
func (l *Local) AddClient(ctx context.Context, by Principal, req AddClientRequest) (_ *AddClientResult, err error) {
	a, err := l.begin(ctx, by, "AddClient", store.AuditClientAdded, "client:"+req.ID)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.client = req.ID
	res := &AddClientResult{}
	secret := req.Secret
	a.set("secret", "given")
	if secret == "" {
		a.set("secret", "generated")
		if secret, err = NewClientSecret(); err != nil {
			return nil, l.fail("client", err)
		}
		res.GeneratedSecret = secret
	} else if len(secret) < 32 || len(secret) > 512 || !input.Printable(secret) {
		// Client secrets are hashed with plain SHA-256, which is only safe
		// for high-entropy secrets: refuse short ones.
		return nil, errorf(KindInvalid, "client secret must be 32 to 512 printable bytes (leave --secret-file out to generate one)")
	}
	if len(req.Name) > input.MaxNameLen || !input.Printable(req.Name) {
		return nil, errorf(KindInvalid, "client name must be at most %d printable characters", input.MaxNameLen)
	}
	scopes := req.Scopes
	if len(scopes) == 0 {
		scopes = []string{"service", "credential"}
	}
	for _, s := range scopes {
		if !ops.ValidScope(s) {
			return nil, errorf(KindInvalid, "scope %q is not one signd serves (service, credential, openid, email, <ns>.personal_info, <ns>.id_number, <ns>.proof)", s)
		}
	}
	if dup := ops.FirstDuplicate(req.RedirectURIs); dup != "" {
		return nil, errorf(KindInvalid, "redirect URI %q given twice", dup)
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	a.set("name", name)
	a.set("redirect_uris", strings.Join(req.RedirectURIs, " "))
	a.set("scopes", strings.Join(scopes, " "))
	a.set("require_pkce", strconv.FormatBool(req.RequirePKCE))
	if req.SectorIdentifier != "" {
		a.set("sector_identifier", req.SectorIdentifier)
	}
	if req.IDTokenAlg != "" {
		a.set("id_token_signed_response_alg", req.IDTokenAlg)
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
	err = a.update(ctx, func(tx store.Tx) (err error) {
		if err := tx.CreateClient(c); err != nil {
			return err
		}
		c, err = tx.Client(req.ID)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", req.ID), err)
	}
	res.Client = *ops.ClientViewOf(c)
	return res, nil
}

// ListClients implements Service.
func (l *Local) ListClients(ctx context.Context, by Principal) (_ []ClientView, err error) {
	a, err := l.read(ctx, by, "ListClients", "clients", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	var cs []store.Client
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		cs, err = tx.Clients()
		return err
	})
	if err != nil {
		return nil, l.fail("list clients", err)
	}
	out := make([]ClientView, 0, len(cs))
	for i := range cs {
		out = append(out, *ops.ClientViewOf(&cs[i]))
	}
	return out, nil
}

// ShowClient implements Service.
func (l *Local) ShowClient(ctx context.Context, by Principal, id string) (_ *ClientView, err error) {
	a, err := l.read(ctx, by, "ShowClient", "client:"+id, nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.client = id
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	var c *store.Client
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.Client(id)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", id), err)
	}
	return ops.ClientViewOf(c), nil
}

// RemoveClient implements Service: it deletes the client and revokes its
// access tokens, SADs, codes and pending requests in one transaction.
func (l *Local) RemoveClient(ctx context.Context, by Principal, id string) (_ *RemoveResult, err error) {
	a, err := l.begin(ctx, by, "RemoveClient", store.AuditClientRemoved, "client:"+id)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "RemoveClient", NameRequest{Name: id}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.client = id
	var r store.Revoked
	err = a.update(ctx, func(tx store.Tx) (err error) {
		if err := tx.DeleteClient(id); err != nil {
			return err
		}
		if r, err = tx.RevokeClient(id); err != nil {
			return err
		}
		a.result["revoked"] = ops.RevokedViewOf(r).String()
		return nil
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", id), err)
	}
	return &RemoveResult{Removed: id, Revoked: *ops.RevokedViewOf(r)}, nil
}

package clients

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/hsmkeys"
	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// Clients performs the operations on OAuth clients.
type Clients struct {
	*act.Core
	Hasher *store.Hasher
	// HSM makes the first OIDC signing key of a client's ID-token
	// algorithm (CheckIDTokenAlg).
	HSM *hsmkeys.HSM
}

// NewClientSecret returns 256 random bits, base64url without padding.
func NewClientSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// AddClient performs Service.AddClient.
func (l *Clients) AddClient(ctx context.Context, by principal.Principal, req ops.AddClientRequest) (_ *ops.AddClientResult, err error) {
	a, err := l.Begin(ctx, by, "AddClient", store.AuditClientAdded, "client:"+req.ID)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Client = req.ID
	c, generated, err := l.newClient(a, req)
	if err != nil {
		return nil, err
	}
	// The client is checked whole, and its ID found free, before
	// CheckIDTokenAlg may make the first key of its algorithm: a client
	// refused must cost no key. That key is published in the client's
	// transaction (within), so a client refused there — another `client
	// add` of its ID committed first — leaves no key behind either.
	var joined bool // within ran the client's write
	var tried error // what within's last transaction returned
	create := func(tx store.Tx) (err error) {
		if err := tx.CreateClient(c); err != nil {
			return err
		}
		c, err = tx.Client(req.ID)
		return err
	}
	within := func(ctx context.Context, ring func(oidc.KeyRingTx) error) error {
		joined = true
		tried = a.Update(ctx, func(tx store.Tx) error {
			if err := ring(tx); err != nil {
				return err
			}
			return create(tx)
		})
		return tried
	}
	if err := l.checkNew(ctx, c); err != nil {
		return nil, err
	}
	if err := l.HSM.CheckIDTokenAlg(ctx, by, c, within); err != nil {
		return nil, err
	}
	switch {
	case joined && tried == nil:
	case joined && store.MayHaveCommitted(tried):
		// The key ring found its key stored (oidc.KeyRing.settle): the
		// client and the entry committed with it.
		a.Recorded = true
	default:
		// No key was made, or its write rolled back: the client alone.
		if err := a.Update(ctx, create); err != nil {
			return nil, l.Fail(fmt.Sprintf("client %q", req.ID), err)
		}
	}
	return &ops.AddClientResult{GeneratedSecret: generated, Client: *ops.ClientViewOf(c)}, nil
}

// newClient checks req's own fields, records them on a (never the
// secret, only whether it was given or generated) and builds the client;
// generated is the secret made when req gave none.
func (l *Clients) newClient(a *act.Act, req ops.AddClientRequest) (c *store.Client, generated string, err error) {
	secret := req.Secret
	a.Set("secret", "given")
	if secret == "" {
		a.Set("secret", "generated")
		if secret, err = NewClientSecret(); err != nil {
			return nil, "", l.Fail("client", err)
		}
		generated = secret
	} else if len(secret) < 32 || len(secret) > 512 || !input.Printable(secret) {
		// Client secrets are hashed with plain SHA-256, which is only safe
		// for high-entropy secrets: refuse short ones.
		return nil, "", act.Errorf(ops.KindInvalid, "client secret must be 32 to 512 printable bytes (leave --secret-file out to generate one)")
	}
	if len(req.Name) > input.MaxNameLen || !input.Printable(req.Name) {
		return nil, "", act.Errorf(ops.KindInvalid, "client name must be at most %d printable characters", input.MaxNameLen)
	}
	scopes := req.Scopes
	if len(scopes) == 0 {
		scopes = []string{"service", "credential"}
	}
	for _, s := range scopes {
		if !ops.ValidScope(s) {
			return nil, "", act.Errorf(ops.KindInvalid, "scope %q is not one signd serves (service, credential, openid, email, <ns>.personal_info, <ns>.id_number, <ns>.proof)", s)
		}
	}
	if dup := ops.FirstDuplicate(req.RedirectURIs); dup != "" {
		return nil, "", act.Errorf(ops.KindInvalid, "redirect URI %q given twice", dup)
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	a.Set("name", name)
	a.Set("redirect_uris", strings.Join(req.RedirectURIs, " "))
	a.Set("scopes", strings.Join(scopes, " "))
	a.Set("require_pkce", strconv.FormatBool(req.RequirePKCE))
	if req.SectorIdentifier != "" {
		a.Set("sector_identifier", req.SectorIdentifier)
	}
	if req.IDTokenAlg != "" {
		a.Set("id_token_signed_response_alg", req.IDTokenAlg)
	}
	return &store.Client{
		ID: req.ID, Name: name, SecretHash: store.HashSecret(secret),
		RedirectURIs: req.RedirectURIs, Scopes: slices.Compact(slices.Sorted(slices.Values(scopes))),
		SectorIdentifier: req.SectorIdentifier, RequirePKCE: req.RequirePKCE,
		IDTokenSignedResponseAlg: req.IDTokenAlg,
	}, generated, nil
}

// checkNew checks c whole (its sector identifier, its ID-token algorithm's
// name, the store's rules) and that its ID is free.
func (l *Clients) checkNew(ctx context.Context, c *store.Client) error {
	if err := checkSector(c); err != nil {
		return err
	}
	if err := hsmkeys.CheckIDTokenAlgName(c); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return l.Fail(fmt.Sprintf("client %q", c.ID), err)
	}
	err := l.Store.View(ctx, func(tx store.Tx) error {
		_, err := tx.Client(c.ID)
		return err
	})
	switch {
	case err == nil:
		return l.Fail(fmt.Sprintf("client %q", c.ID), store.ErrAlreadyExists)
	case !errors.Is(err, store.ErrNotFound):
		return l.Fail(fmt.Sprintf("client %q", c.ID), err)
	}
	return nil
}

// ListClients performs Service.ListClients.
func (l *Clients) ListClients(ctx context.Context, by principal.Principal) (_ []ops.ClientView, err error) {
	a, err := l.Read(ctx, by, "ListClients", "clients", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	var cs []store.Client
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		cs, err = tx.Clients()
		return err
	})
	if err != nil {
		return nil, l.Fail("list clients", err)
	}
	out := make([]ops.ClientView, 0, len(cs))
	for i := range cs {
		out = append(out, *ops.ClientViewOf(&cs[i]))
	}
	return out, nil
}

// ShowClient performs Service.ShowClient.
func (l *Clients) ShowClient(ctx context.Context, by principal.Principal, id string) (_ *ops.ClientView, err error) {
	a, err := l.Read(ctx, by, "ShowClient", "client:"+id, nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Client = id
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	var c *store.Client
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.Client(id)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("client %q", id), err)
	}
	return ops.ClientViewOf(c), nil
}

// RemoveClient performs Service.RemoveClient: it deletes the client and revokes its
// access tokens, SADs, codes and pending requests in one transaction.
func (l *Clients) RemoveClient(ctx context.Context, by principal.Principal, id string) (_ *ops.RemoveResult, err error) {
	a, err := l.Begin(ctx, by, "RemoveClient", store.AuditClientRemoved, "client:"+id)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "RemoveClient", ops.NameRequest{Name: id}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Client = id
	var r store.Revoked
	err = a.Update(ctx, func(tx store.Tx) (err error) {
		if err := tx.DeleteClient(id); err != nil {
			return err
		}
		if r, err = tx.RevokeClient(id); err != nil {
			return err
		}
		a.Result["revoked"] = ops.RevokedViewOf(r).String()
		return nil
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("client %q", id), err)
	}
	return &ops.RemoveResult{Removed: id, Revoked: *ops.RevokedViewOf(r)}, nil
}

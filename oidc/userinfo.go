package oidc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// jsonUTF8 is the Content-Type of /userinfo answers (the service specification's).
const jsonUTF8 = "application/json;charset=UTF-8"

// userinfo answers GET and POST /userinfo (OpenID Connect Core §5.3) for a
// bearer token that oauth.RequireBearer accepted with scope openid: the
// protocol claims sub, aud (array), auth_time, iat (when the access token
// was issued), iss and rat, plus the identity claims of the granted scopes
// that the user approved as they are now (Claims.Release): what the user
// saw on the consent page is what the client gets. A claim that is new or
// changed since the consent is left out until the user consents again.
func (p *Provider) userinfo(c echo.Context) error {
	g := oauth.GrantFrom(c)
	if g == nil {
		return errors.New("oidc: userinfo without a bearer grant")
	}
	var (
		tok    *store.Token
		user   *store.User
		client *store.Client
		proofs []store.Proof
	)
	err := p.Store.View(c.Request().Context(), func(tx Tx) (err error) {
		if tok, err = tx.Token(g.TokenHash); err != nil {
			return err
		}
		if user, err = tx.User(g.Username); err != nil {
			return err
		}
		if client, err = tx.Client(g.ClientID); err != nil {
			return err
		}
		if !p.Claims.WantsProofs(g.Scopes) {
			return nil
		}
		for _, ref := range user.Proofs {
			pr, err := tx.Proof(user.Username, ref.ID)
			if err != nil {
				return err
			}
			proofs = append(proofs, *pr)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		// Revoked meanwhile, or its user or client was removed.
		return p.invalidToken("The access token is invalid or revoked")
	}
	if err != nil {
		return err
	}
	sub, err := p.Subject(client, user)
	if err != nil {
		return fmt.Errorf("oidc: userinfo: %w", err)
	}
	body, withheld := p.Claims.Release(user, proofs, g.Scopes, tok.Consented)
	for _, w := range withheld {
		// The claim's name only: its value is personal data.
		msg := "userinfo: claim withheld: it was not on the consent page the user approved"
		if w.Changed {
			msg = "userinfo: claim withheld: it changed since the user consented"
		}
		p.log().Info(msg, "claim", w.Claim, "client_id", g.ClientID, "username", g.Username)
	}
	body["sub"] = sub
	body["aud"] = []string{g.ClientID}
	body["iss"] = p.Issuer
	body["iat"] = tok.CreatedAt.Unix()
	if !g.AuthTime.IsZero() {
		body["auth_time"] = g.AuthTime.Unix()
	}
	if !g.RequestedAt.IsZero() {
		body["rat"] = g.RequestedAt.Unix()
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store") // personal data
	return c.Blob(http.StatusOK, jsonUTF8, data)
}

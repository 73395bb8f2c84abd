package oauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
)

// revoke is POST /oauth2/revoke (RFC 7009): an authenticated client
// revokes one of its access tokens, SAD or refresh tokens; a refresh
// token goes with every token of its grant (revokeStored). An unknown
// token, or another client's, is answered 200 like a revoked one (nothing
// tells the caller whether it existed); token_type_hint is accepted and
// not needed.
func (s *Server) revoke(c echo.Context) error {
	form, client, err := s.clientRequest(c)
	if err != nil {
		return err
	}
	value := form.Get("token")
	if value == "" {
		return Errorf(CodeInvalidRequest, http.StatusBadRequest, "Missing parameter token")
	}
	kind, n, err := s.revokeIf(c.Request().Context(), value, func(tok *store.Token) bool {
		return tok.ClientID == client.ID
	})
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.InfoContext(c.Request().Context(), "token revoked", "client_id", client.ID, "kind", string(kind), "revoked", n)
	}
	return c.NoContent(http.StatusOK)
}

// revokeIf revokes the token value (revokeStored) in one write transaction
// when it exists and owns reports true, and returns its kind and how many
// tokens went (0: none, unknown or not owned).
func (s *Server) revokeIf(ctx context.Context, value string, owns func(*store.Token) bool) (store.TokenKind, int, error) {
	var kind store.TokenKind
	n := 0
	err := s.store.Update(ctx, func(tx Tx) error {
		kind, n = "", 0
		tok, err := tx.Token(store.Fingerprint(value))
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		case !owns(tok):
			return nil
		}
		kind = tok.Kind
		n, err = revokeStored(tx, tok)
		return err
	})
	return kind, n, err
}

// revokeStored removes tok in the caller's write transaction and returns
// how many tokens went. An access token or SAD goes alone. A refresh token
// goes with its whole grant (RFC 7009 §2.1): every token that carries its
// family — the access tokens of every rotation, the rotated refresh tokens
// and the current one — so that neither a refresh in flight nor an access
// token it minted outlives the revocation. Both revocation endpoints
// (/oauth2/revoke, CSC auth/revoke) come through here.
func revokeStored(tx Tx, tok *store.Token) (int, error) {
	if tok.Kind == store.TokenRefresh && len(tok.CodeHash) != 0 {
		return tx.DeleteTokensByCode(tok.CodeHash)
	}
	return 1, tx.DeleteToken(tok.Hash)
}

// RevokeOwn revokes the token value on behalf of the bearer g (CSC v1
// §11.3 auth/revoke, RFC 7009 §2.1): an access token or SAD is removed; a
// refresh token is removed with its whole family (the access tokens issued
// with it included; revokeStored). A token of another user or client, or
// an unknown one, is left alone and answered like a revoked one: nil.
func (s *Server) RevokeOwn(ctx context.Context, g *Grant, value string) error {
	if g == nil {
		return Errorf(CodeInvalidToken, http.StatusUnauthorized, "Missing access token")
	}
	kind, n, err := s.revokeIf(ctx, value, func(tok *store.Token) bool {
		return tok.Username == g.Username && tok.ClientID == g.ClientID
	})
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.InfoContext(ctx, "token revoked by its holder", "client_id", g.ClientID, "username", g.Username,
			"kind", string(kind), "revoked", n)
	}
	return nil
}

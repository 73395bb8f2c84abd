package oauth

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
)

// revoke is POST /oauth2/revoke (RFC 7009): an authenticated client
// revokes one of its access tokens or SAD. An unknown token, or another
// client's, is answered 200 like a revoked one (nothing tells the caller
// whether it existed); token_type_hint is accepted and not needed.
func (s *Server) revoke(c echo.Context) error {
	form, client, err := s.clientRequest(c)
	if err != nil {
		return err
	}
	value := form.Get("token")
	if value == "" {
		return Errorf(CodeInvalidRequest, http.StatusBadRequest, "Missing parameter token")
	}
	revoked := false
	err = s.store.Update(c.Request().Context(), func(tx Tx) error {
		tok, err := tx.Token(store.Fingerprint(value))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if tok.ClientID != client.ID {
			return nil
		}
		revoked = true
		return tx.DeleteToken(tok.Hash)
	})
	if err != nil {
		return err
	}
	if revoked {
		s.log.Info("token revoked", "client_id", client.ID)
	}
	return c.NoContent(http.StatusOK)
}

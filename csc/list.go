package csc

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

type listResponse struct {
	CredentialIDs []string `json:"credentialIDs"`
	NextPageToken string   `json:"nextPageToken,omitempty"`
}

// list is POST /csc/v1/credentials/list: the caller's credentials that are
// not pending (enabled and disabled ones: the client reads key.status from
// credentials/info), in credential-ID order, a page at a time. The cost is
// a cursor range over the owner index, proportional to the page.
func (h *Handler) list(c echo.Context) error {
	return protocol.JSONMethod(h.parseList, h.listCredentials)(c)
}

// listRequest is a parsed credentials/list request.
type listRequest struct {
	size      int    // maxResults, defaulted and capped
	pageToken string // "" for the first page
}

// parseList checks the parameters of credentials/list in a fixed order.
func (h *Handler) parseList(p protocol.Params) (req listRequest, e *oauth.Error) {
	if p.Has("userID") {
		return req, protocol.BadRequest(descUserIDNotNull)
	}
	size, ok, e := p.PositiveInt("maxResults")
	if e != nil {
		return req, e
	}
	if !ok {
		size = h.MaxResultsDefault
	}
	req.size = min(size, h.MaxResultsLimit)
	if req.pageToken, _, e = p.Str("pageToken", false); e != nil {
		return req, e
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return req, protocol.Invalid("clientData")
	}
	return req, nil
}

// listCredentials reads the page req asks for, after the credential its
// page token names (which must be the caller's).
func (h *Handler) listCredentials(ctx context.Context, g *oauth.Grant, req listRequest) (*listResponse, error) {
	after, size := "", req.size
	if req.pageToken != "" {
		var ok bool
		if after, ok = h.openPageToken(req.pageToken, g.Username); !ok {
			return nil, protocol.Invalid("pageToken")
		}
	}

	ids := make([]string, 0, size)
	more := false
	err := h.Store.View(ctx, func(tx protocol.Tx) error {
		ids, more = ids[:0], false
		cursor := after
		for {
			want := size + 1 - len(ids) // one more than the page: are there more?
			cs, err := tx.Credentials(g.Username, cursor, want)
			if err != nil {
				return err
			}
			for _, cr := range cs {
				if cr.Status == store.CredentialPending {
					continue
				}
				if len(ids) == size {
					more = true
					return nil
				}
				ids = append(ids, cr.ID)
			}
			if len(cs) < want {
				return nil
			}
			cursor = cs[len(cs)-1].ID
		}
	})
	if err != nil {
		return nil, err
	}
	res := &listResponse{CredentialIDs: ids}
	if more && len(ids) > 0 {
		res.NextPageToken = h.pageToken(ids[len(ids)-1], g.Username)
	}
	return res, nil
}

// Page tokens are base64url(after ‖ tag), after being the last credential
// ID of the previous page and tag the first 16 bytes of
// HMAC-SHA256(PageTokenKey, "signd csc list 1" 0 username 0 after). They
// are opaque to clients, cannot be forged or altered, and are only good for
// the user they were issued to. They do not expire: they grant nothing the
// user's own listing would not.
const pageTagLen = 16

func (h *Handler) pageTag(after, username string) []byte {
	m := hmac.New(sha256.New, h.PageTokenKey)
	m.Write([]byte("signd csc list 1\x00"))
	m.Write([]byte(username))
	m.Write([]byte{0})
	m.Write([]byte(after))
	return m.Sum(nil)[:pageTagLen]
}

func (h *Handler) pageToken(after, username string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte(after), h.pageTag(after, username)...))
}

func (h *Handler) openPageToken(token, username string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	// One spelling per token: the decoder skips line breaks and non-zero
	// pad bits (RFC 4648 §3.5), so only the canonical encoding is taken.
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != token ||
		len(raw) <= pageTagLen || len(raw) > 512 {
		return "", false
	}
	after, tag := string(raw[:len(raw)-pageTagLen]), raw[len(raw)-pageTagLen:]
	if !hmac.Equal(tag, h.pageTag(after, username)) {
		return "", false
	}
	return after, true
}

package csc

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
	"github.com/signd/signd/csc/protocol"
)

// specsVersion is the CSC API version signd implements.
const specsVersion = "1.0.4.0"

type infoResponse struct {
	Specs       string   `json:"specs"`
	Name        string   `json:"name"`
	Logo        string   `json:"logo"`
	Region      string   `json:"region"`
	Lang        string   `json:"lang"`
	Description string   `json:"description"`
	AuthType    []string `json:"authType"`
	OAuth2      string   `json:"oauth2"`
	Methods     []string `json:"methods"`
}

// info is POST /csc/v1/info: no authentication; the optional lang is
// checked for its type and otherwise ignored (one language is served).
func (h *Handler) info(c echo.Context) error {
	p, e := protocol.ReadParams(c.Request())
	if e != nil {
		return e
	}
	if _, _, e := p.Str("lang", false); e != nil {
		return e
	}
	return c.JSON(http.StatusOK, infoResponse{
		Specs:       specsVersion,
		Name:        h.Info.Name,
		Logo:        h.Info.Logo,
		Region:      h.Info.Region,
		Lang:        h.Info.Lang,
		Description: h.Info.Description,
		AuthType:    h.authTypes(),
		OAuth2:      h.oauth2Base(),
		Methods:     slices.Clone(h.methods),
	})
}

// authTypes are info's authType: oauth2code always, basic when auth/login
// is mounted.
func (h *Handler) authTypes() []string {
	if slices.Contains(h.methods, "auth/login") {
		return []string{"basic", "oauth2code"}
	}
	return []string{"oauth2code"}
}

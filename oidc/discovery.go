package oidc

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Discovery is the OpenID Provider Metadata (OpenID Connect Discovery 1.0
// §3, RFC 8414) signd publishes.
type Discovery struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	UserinfoEndpoint                           string   `json:"userinfo_endpoint"`
	JWKSURI                                    string   `json:"jwks_uri"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	SubjectTypesSupported                      []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported           []string `json:"id_token_signing_alg_values_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	ClaimsSupported                            []string `json:"claims_supported"`
	ClaimsParameterSupported                   bool     `json:"claims_parameter_supported"`
	RequestParameterSupported                  bool     `json:"request_parameter_supported"`
	RequestURIParameterSupported               bool     `json:"request_uri_parameter_supported"`
	UILocalesSupported                         []string `json:"ui_locales_supported"`
	DisplayValuesSupported                     []string `json:"display_values_supported"`
	AuthorizationResponseISSParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
}

// Metadata returns the discovery document. Every endpoint is the issuer
// (server.base_url) plus its path. id_token_signing_alg_values_supported
// lists the algorithms with an active key, the default (oidc.signing_alg)
// first; RS256 is always among them (Discovery §3).
func (p *Provider) Metadata(ctx context.Context) (*Discovery, error) {
	algs, err := p.Keys.Algorithms(ctx)
	if err != nil {
		return nil, err
	}
	clientAuth := []string{"client_secret_basic", "client_secret_post"}
	return &Discovery{
		Issuer:                                     p.Issuer,
		AuthorizationEndpoint:                      p.Issuer + PathAuthorize,
		TokenEndpoint:                              p.Issuer + PathToken,
		UserinfoEndpoint:                           p.Issuer + PathUserinfo,
		JWKSURI:                                    p.Issuer + PathJWKS,
		RevocationEndpoint:                         p.Issuer + PathRevoke,
		ScopesSupported:                            p.Claims.Scopes(),
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        []string{"authorization_code"},
		SubjectTypesSupported:                      []string{"pairwise"},
		IDTokenSigningAlgValuesSupported:           algs,
		TokenEndpointAuthMethodsSupported:          clientAuth,
		RevocationEndpointAuthMethodsSupported:     clientAuth,
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClaimsSupported:                            p.Claims.Supported(),
		UILocalesSupported:                         []string{"nl", "en"},
		DisplayValuesSupported:                     []string{"page"},
		AuthorizationResponseISSParameterSupported: true,
	}, nil
}

func (p *Provider) discovery(c echo.Context) error {
	md, err := p.Metadata(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, md)
}

func (p *Provider) jwks(c echo.Context) error {
	set, err := p.Keys.JWKS(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set)
}

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// TestOpenAPIDescribesTheDaemon sends one request to every endpoint family
// of the running daemon and validates each real response (status and body)
// against docs/openapi.yaml. The CSC endpoints are validated in depth by
// every test of package csc.
func TestOpenAPIDescribesTheDaemon(t *testing.T) {
	router := openAPIRouter(t)
	// ES256 as the default: the JWKS then holds an EC and an RSA key
	// (RS256 is always kept), so both JWK shapes are checked.
	e := newEnv(t, "  signing_alg: ES256\n")
	addr, _ := e.startDaemon()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	cases := []struct {
		method, path, ctype, body string
		status                    int
	}{
		{"GET", "/healthz", "", "", 200},
		{"GET", "/readyz", "", "", 200},
		{"GET", "/.well-known/openid-configuration", "", "", 200},
		{"GET", "/.well-known/jwks.json", "", "", 200},
		{"GET", "/userinfo", "", "", 401},
		{"POST", "/oauth2/token", "application/x-www-form-urlencoded", "grant_type=authorization_code&code=x", 401},
		{"POST", "/oauth2/revoke", "application/x-www-form-urlencoded", "token=x", 401},
		{"GET", "/oauth2/authorize?response_type=code&client_id=nobody&state=s&scope=service", "", "", 400},
		{"POST", "/csc/v1/info", "application/json", "{}", 200},
		{"POST", "/csc/v1/credentials/list", "application/json", "{}", 401},
		{"POST", "/csc/v1/credentials/info", "application/json", "{}", 401},
		{"POST", "/csc/v1/signatures/signHash", "application/json", "{}", 401},
		{"POST", "/csc/v1/credentials/authorize", "application/json", "{}", 401},
		{"POST", "/csc/v1/credentials/extendTransaction", "application/json", "{}", 401},
		{"POST", "/csc/v1/credentials/sendOTP", "application/json", "{}", 401},
		{"POST", "/csc/v1/auth/login", "application/json", "{}", 501}, // csc.auth_login is off by default
		{"POST", "/csc/v1/auth/revoke", "application/json", `{"token":"x"}`, 401},
		{"POST", "/csc/v1/signatures/timestamp", "application/json", "{}", 501}, // csc.timestamp.enabled is false
		{"POST", "/csc/v1/credentials/nope", "application/json", "{}", 404},
		{"GET", "/audit/checkpoint", "", "", 404},     // none signed yet
		{"GET", "/audit/checkpoint.key", "", "", 404}, // no audit key
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", res.StatusCode, tc.status, body)
			}
			checkOpenAPI(t, router, tc.method, tc.path, req.Header, tc.body, res.StatusCode, res.Header, body)
		})
	}
}

// openAPIRouter loads and validates docs/openapi.yaml and returns a router
// over its operations (its server URL dropped, so any host matches).
func openAPIRouter(t *testing.T) routers.Router {
	t.Helper()
	return openAPIRouterOf(t, "../../docs/openapi.yaml")
}

// openAPIRouterOf is openAPIRouter for the OpenAPI document at path.
func openAPIRouterOf(t *testing.T, path string) routers.Router {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// checkOpenAPI validates one real response (status, headers, body) to
// method path against the document's operation.
func checkOpenAPI(t *testing.T, router routers.Router, method, path string, reqHeader http.Header, reqBody string,
	status int, header http.Header, body []byte) {
	t.Helper()
	u, _ := url.Parse(path)
	r := &http.Request{Method: method, URL: u, Header: reqHeader, Body: io.NopCloser(strings.NewReader(reqBody))}
	route, params, err := router.FindRoute(r)
	if err != nil {
		t.Fatalf("the OpenAPI document has no operation for %s %s: %v", method, u.Path, err)
	}
	// Pages are HTML: their status is checked, their markup is not.
	// JSON lines (the audit export) too: their caller decodes each line.
	html := strings.HasPrefix(header.Get("Content-Type"), "text/html")
	ndjson := header.Get("Content-Type") == "application/x-ndjson"
	opts := &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: html || ndjson}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts},
		Status:                 status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	})
	if err != nil {
		t.Errorf("%s %s: response does not match the OpenAPI document: %v\n%.300s", method, path, err, body)
	}
}

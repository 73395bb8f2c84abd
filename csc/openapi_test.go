package csc_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// apiRouter finds operations of docs/openapi.yaml; TestMain loads it.
var apiRouter routers.Router

// loadOpenAPI loads and validates docs/openapi.yaml. Its server URL is
// dropped so that paths match whatever host the test server has.
func loadOpenAPI() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../docs/openapi.yaml")
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml is not valid OpenAPI: %w", err)
	}
	doc.Servers = nil
	return legacy.NewRouter(doc)
}

// validateResponse checks a real response against the document: the status
// must be documented for the operation and the body must match its schema.
// Requests that succeeded are checked against the document too.
func validateResponse(req *http.Request, reqBody []byte, res *http.Response, body []byte) error {
	u := *req.URL
	r := &http.Request{Method: req.Method, URL: &url.URL{Path: u.Path, RawQuery: u.RawQuery}, Header: req.Header,
		Body: io.NopCloser(bytes.NewReader(reqBody))}
	route, params, err := apiRouter.FindRoute(r)
	if err != nil {
		if res.StatusCode == http.StatusMethodNotAllowed {
			return nil // a method the document does not list for the path
		}
		return fmt.Errorf("no operation for %s %s: %w", req.Method, u.Path, err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	if res.StatusCode == http.StatusOK {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("request: %w", err)
		}
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.StatusCode, Header: res.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	})
}

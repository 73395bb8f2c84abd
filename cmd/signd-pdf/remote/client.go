package remote

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
)

// Client calls the CSC API of one signing service for one credential.
type Client struct {
	// BaseURL is the service's base URL; the API is at BaseURL/csc/v1.
	BaseURL string
	// AccessToken is a service-scope bearer token (CSC v1 §8.3.2).
	AccessToken string
	// CredentialID names the credential that signs.
	CredentialID string
	// Authorize obtains a SAD for signing digest (SHA-256) once with the
	// credential: the credential-scope authorization (CSC v1 §8.3).
	Authorize func(ctx context.Context, digest []byte) (sad string, err error)
	// HTTP is the client for every call; nil = http.DefaultClient.
	HTTP *http.Client
}

// Error is a CSC error response (CSC v1 §10).
type Error struct {
	Method      string
	Status      int
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %d %s: %s", e.Method, e.Status, e.Code, e.Description)
}

// maxResponse bounds a CSC response body.
const maxResponse = 1 << 20

func (c *Client) call(ctx context.Context, method string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+"/csc/v1/"+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+c.AccessToken)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(r)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if res.StatusCode != http.StatusOK {
		e := &Error{Method: method, Status: res.StatusCode}
		_ = json.Unmarshal(data, e)
		return e
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("%s: response: %w", method, err)
	}
	return nil
}

// Chain returns the credential's certificate chain, signer first
// (credentials/info with certificates "chain").
func (c *Client) Chain(ctx context.Context) ([]*x509.Certificate, error) {
	var resp struct {
		Key struct {
			Status string `json:"status"`
		} `json:"key"`
		Cert struct {
			Certificates []string `json:"certificates"`
		} `json:"cert"`
	}
	if err := c.call(ctx, "credentials/info", map[string]any{"credentialID": c.CredentialID, "certificates": "chain"}, &resp); err != nil {
		return nil, err
	}
	if resp.Key.Status != "enabled" {
		return nil, fmt.Errorf("credentials/info: the key is %q", resp.Key.Status)
	}
	if len(resp.Cert.Certificates) == 0 {
		return nil, errors.New("credentials/info: no certificates")
	}
	chain := make([]*x509.Certificate, len(resp.Cert.Certificates))
	for i, s := range resp.Cert.Certificates {
		der, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("credentials/info: certificate %d: %w", i, err)
		}
		if chain[i], err = x509.ParseCertificate(der); err != nil {
			return nil, fmt.Errorf("credentials/info: certificate %d: %w", i, err)
		}
	}
	return chain, nil
}

// OIDs of signHash and signatures/timestamp.
const (
	oidRSAEncryption = "1.2.840.113549.1.1.1"
	oidSHA256        = "2.16.840.1.101.3.4.2.1"
)

// SignHash signs a SHA-256 digest with the credential (RSA PKCS#1 v1.5)
// under sad.
func (c *Client) SignHash(ctx context.Context, sad string, digest []byte) ([]byte, error) {
	var resp struct {
		Signatures []string `json:"signatures"`
	}
	err := c.call(ctx, "signatures/signHash", map[string]any{
		"credentialID": c.CredentialID, "SAD": sad, "hash": []string{base64.StdEncoding.EncodeToString(digest)},
		"signAlgo": oidRSAEncryption, "hashAlgo": oidSHA256,
	}, &resp)
	if err != nil {
		return nil, err
	}
	if len(resp.Signatures) != 1 {
		return nil, fmt.Errorf("signatures/signHash: %d signatures for one hash", len(resp.Signatures))
	}
	return base64.StdEncoding.DecodeString(resp.Signatures[0])
}

// timestampHashes are the hashAlgo OIDs of signatures/timestamp.
var timestampHashes = map[crypto.Hash]string{
	crypto.SHA256: oidSHA256,
	crypto.SHA384: "2.16.840.1.101.3.4.2.2",
	crypto.SHA512: "2.16.840.1.101.3.4.2.3",
}

// Timestamp returns an RFC 3161 TimeStampToken (DER) over digest, a hash
// of h, carrying nonce when it is not nil (signatures/timestamp, CSC v1
// §11.10).
func (c *Client) Timestamp(ctx context.Context, h crypto.Hash, digest []byte, nonce *big.Int) ([]byte, error) {
	oid, ok := timestampHashes[h]
	if !ok {
		return nil, fmt.Errorf("signatures/timestamp: hash %v is not offered", h)
	}
	req := map[string]any{"hash": base64.StdEncoding.EncodeToString(digest), "hashAlgo": oid}
	if nonce != nil {
		req["nonce"] = hex.EncodeToString(nonce.Bytes())
	}
	var resp struct {
		Timestamp string `json:"timestamp"`
	}
	if err := c.call(ctx, "signatures/timestamp", req, &resp); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(resp.Timestamp)
}

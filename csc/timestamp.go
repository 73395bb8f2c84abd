package csc

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math/big"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// TimeStamper makes RFC 3161 time-stamp tokens for signatures/timestamp;
// cmd/signd adapts package tsa to it.
type TimeStamper interface {
	// TimeStamp returns a DER TimeStampToken over digest (a hash of hash)
	// carrying nonce when it is not nil, and the token's serial number.
	// ErrTimeStampNotEnrolled when no time-stamping key is ready.
	TimeStamp(ctx context.Context, hash crypto.Hash, digest []byte, nonce *big.Int) (token []byte, serial *big.Int, err error)
}

// ErrTimeStampNotEnrolled is what a TimeStamper returns while the
// time-stamping authority has no key with a usable certificate.
var ErrTimeStampNotEnrolled = errors.New("csc: no time-stamping key")

// maxNonceHex bounds the hex nonce of signatures/timestamp: 64 bytes.
const maxNonceHex = 128

// timestampHashes are the hashAlgo values signatures/timestamp accepts
// (NIST SHA-2 OIDs; SHA-1 is refused).
var timestampHashes = map[string]crypto.Hash{
	"2.16.840.1.101.3.4.2.1": crypto.SHA256,
	"2.16.840.1.101.3.4.2.2": crypto.SHA384,
	"2.16.840.1.101.3.4.2.3": crypto.SHA512,
}

const descTSANotEnrolled = "The time-stamping authority has no usable key and certificate"

type timestampResponse struct {
	Timestamp string `json:"timestamp"`
}

// timestamp is POST /csc/v1/signatures/timestamp (CSC v1 §11.10): a
// service bearer (as every other method but info), hash (base64),
// hashAlgo (OID), optional nonce (hex) and clientData. The token is
// audited before it leaves: no audit entry, no token.
func (h *Handler) timestamp(c echo.Context) error {
	g, req, e := protocol.ParseRequest(c, parseTimestamp)
	if e != nil {
		return e
	}
	token, err := h.stamp(c.Request().Context(), g, req)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, timestampResponse{Timestamp: base64.StdEncoding.EncodeToString(token)})
}

// timestampRequest is a parsed signatures/timestamp request.
type timestampRequest struct {
	hash   crypto.Hash
	digest []byte
	nonce  *big.Int // nil when absent
}

// parseTimestamp checks the parameters of signatures/timestamp in a fixed
// order.
func parseTimestamp(p protocol.Params) (req timestampRequest, e *oauth.Error) {
	hashB64, _, e := p.Str("hash", true)
	if e != nil {
		return req, e
	}
	hashAlgo, _, e := p.Str("hashAlgo", true)
	if e != nil {
		return req, e
	}
	var ok bool
	if req.hash, ok = timestampHashes[hashAlgo]; !ok {
		return req, protocol.Invalid("hashAlgo")
	}
	var err error
	if req.digest, err = protocol.DecodeBase64(hashB64); err != nil {
		return req, protocol.BadRequest(protocol.DescBadBase64)
	}
	if len(req.digest) != req.hash.Size() {
		return req, protocol.BadRequest(protocol.DescDigestLength)
	}
	if s, present, e := p.Str("nonce", false); e != nil {
		return req, e
	} else if present {
		b, err := hex.DecodeString(s)
		if err != nil || len(s) == 0 || len(s) > maxNonceHex {
			return req, protocol.Invalid("nonce")
		}
		req.nonce = new(big.Int).SetBytes(b)
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return req, protocol.Invalid("clientData")
	}
	return req, nil
}

// stamp has the TimeStamper make the token and audits it; the token leaves
// only once its entry is stored.
func (h *Handler) stamp(ctx context.Context, g *oauth.Grant, req timestampRequest) ([]byte, error) {
	token, serial, err := h.TimeStamper.TimeStamp(ctx, req.hash, req.digest, req.nonce)
	switch {
	case errors.Is(err, ErrTimeStampNotEnrolled):
		h.logger().ErrorContext(ctx, "csc: signatures/timestamp: no time-stamping key", "err", err)
		return nil, &oauth.Error{Code: oauth.CodeServerError, Description: descTSANotEnrolled, Status: http.StatusInternalServerError}
	case err != nil:
		return nil, err
	}
	entry := &store.AuditEntry{
		Time: h.now(), Kind: store.AuditTimestamp, User: g.Username, Client: g.ClientID,
		Hashes: []string{hex.EncodeToString(req.digest)}, Outcome: store.AuditGranted,
		Reason: "serial " + serial.Text(16),
	}
	if err := h.Store.Batch(ctx, func(tx protocol.Tx) error { return tx.AppendAudit(entry) }); err != nil {
		return nil, err
	}
	h.logger().InfoContext(ctx, "csc: time-stamp token issued", "user", g.Username, "client", g.ClientID,
		"serial", serial.Text(16), "audit_seq", entry.Seq)
	return token, nil
}

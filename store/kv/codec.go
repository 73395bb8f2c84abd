package kv

import (
	"encoding/json"
	"errors"

	"github.com/signd/signd/store/kv/binrec"
)

// Records on the signing and token hot paths (tokens: access tokens and
// SADs) are stored in the compact binary form of package binrec instead
// of JSON: about half the bytes, so more of them fit a page and a commit
// writes fewer, and a decode that is a walk over the bytes instead of a
// JSON parse. Both are told apart by their first byte (binrec.IsBinary),
// so a file written before the binary form existed reads as it did;
// records are rewritten in the binary form only when they are written
// again.

// Tokens (oauth.go). Format 1 holds, in order: kind, client ID, username,
// scopes, code hash, credential ID, hashes, auth time, requested at,
// expires at, created at, rotated at (uvarint 0 for absent, 1 followed by
// the time), consented, and, only when it is not 0, the secret generation
// (a uvarint): a record without it, also one written before it existed,
// reads as generation 0, and a SAD of generation 0 is written as before,
// byte for byte.

func encodeToken(r *tokenRecord) []byte {
	e := binrec.NewEncoder(160 + 33*len(r.Hashes))
	e.Str(r.Kind)
	e.Str(r.ClientID)
	e.Str(r.Username)
	e.Strs(r.Scopes)
	e.Bytes(r.CodeHash)
	e.Str(r.CredentialID)
	e.BytesList(r.Hashes)
	e.Time(r.AuthTime)
	e.Time(r.RequestedAt)
	e.Time(r.ExpiresAt)
	e.Time(r.CreatedAt)
	if r.RotatedAt == nil {
		e.Uvarint(0)
	} else {
		e.Uvarint(1)
		e.Time(*r.RotatedAt)
	}
	e.BytesMap(r.Consented)
	if r.SecretGen != 0 {
		e.Uvarint(r.SecretGen)
	}
	return e.Record()
}

// decodeToken reads a token record in either form. Nothing of raw is
// aliased by the result.
func decodeToken(raw []byte) (*tokenRecord, error) {
	r := new(tokenRecord)
	if !binrec.IsBinary(raw) {
		return r, json.Unmarshal(raw, r)
	}
	d := binrec.NewDecoder(raw)
	r.Kind = d.Str()
	r.ClientID = d.Str()
	r.Username = d.Str()
	r.Scopes = d.Strs()
	r.CodeHash = d.Bytes()
	r.CredentialID = d.Str()
	r.Hashes = d.BytesList()
	r.AuthTime = d.Time()
	r.RequestedAt = d.Time()
	r.ExpiresAt = d.Time()
	r.CreatedAt = d.Time()
	switch d.Uvarint() {
	case 0:
	case 1:
		at := d.Time()
		r.RotatedAt = &at
	default:
		d.Fail(errors.New("binary record: rotated at: bad presence flag"))
	}
	r.Consented = d.BytesMap()
	if d.More() {
		if r.SecretGen = d.Uvarint(); r.SecretGen == 0 {
			d.Fail(errors.New("binary record: secret generation 0 written out"))
		}
	}
	return r, d.End()
}

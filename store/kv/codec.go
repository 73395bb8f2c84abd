package kv

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Records on the signing and token hot paths (tokens: access tokens and
// SADs) are stored in a compact binary form instead of JSON: about half
// the bytes, so more of them fit a page and a commit writes fewer, and a
// decode that is a walk over the bytes instead of a JSON parse.
//
// A binary record starts with its format byte (formatBinaryV1). A JSON
// record starts with '{', so both are told apart by their first byte and
// a file written before the binary form existed reads as it did; records
// are rewritten in the binary form only when they are written again.
//
// Format 1 is a sequence of fields in a fixed order, each one of:
//
//	string, bytes   uvarint length ‖ the bytes
//	list            uvarint count ‖ that many strings, or byte strings each
//	                as uvarint (length + 1, 0 for nil) ‖ the bytes
//	map             uvarint count ‖ (string key ‖ bytes value) in key order
//	time            varint Unix seconds ‖ uvarint nanoseconds (< 1e9); the
//	                zero time.Time is its own seconds value, read back in UTC
//
// Nothing may follow the last field. A decoder never trusts a length or a
// count: each is checked against the bytes left before anything is
// allocated, so a damaged record costs at most its own size.
const formatBinaryV1 = 0x01

// errTrailing and errShort are the decoding errors of the binary form.
var (
	errShort    = errors.New("binary record: truncated")
	errTrailing = errors.New("binary record: trailing bytes")
)

// encoder appends the fields of one binary record.
type encoder struct{ buf []byte }

func newEncoder(size int) *encoder {
	e := &encoder{buf: make([]byte, 0, size)}
	e.buf = append(e.buf, formatBinaryV1)
	return e
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) bytes(b []byte) {
	e.uvarint(uint64(len(b)))
	e.buf = append(e.buf, b...)
}

func (e *encoder) strs(ss []string) {
	e.uvarint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// bytesList writes each element's length plus one, 0 standing for a nil
// element, so that nil and empty elements read back as they were.
func (e *encoder) bytesList(bs [][]byte) {
	e.uvarint(uint64(len(bs)))
	for _, b := range bs {
		if b == nil {
			e.uvarint(0)
			continue
		}
		e.uvarint(uint64(len(b)) + 1)
		e.buf = append(e.buf, b...)
	}
}

func (e *encoder) bytesMap(m map[string][]byte) {
	e.uvarint(uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.str(k)
		e.bytes(m[k])
	}
}

func (e *encoder) time(t time.Time) {
	e.buf = binary.AppendVarint(e.buf, t.Unix())
	e.uvarint(uint64(t.Nanosecond()))
}

// decoder reads the fields of one binary record; the first error sticks
// and every later read returns zero values.
type decoder struct {
	buf []byte
	err error
}

// newDecoder checks the format byte of raw.
func newDecoder(raw []byte) *decoder {
	if len(raw) == 0 || raw[0] != formatBinaryV1 {
		return &decoder{err: fmt.Errorf("binary record: unknown format %q", raw[:min(len(raw), 1)])}
	}
	return &decoder{buf: raw[1:]}
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.buf = nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// length reads a length or a count of items of at least minSize bytes
// each, refusing one the rest of the record cannot hold.
func (d *decoder) length(minSize int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.buf)/minSize) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

// raw returns the next n bytes, aliasing the record.
func (d *decoder) raw(n int) []byte {
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) str() string { return string(d.raw(d.length(1))) }

// bytes returns a copy; an empty value reads as nil, as JSON's omitempty
// fields do.
func (d *decoder) bytes() []byte {
	n := d.length(1)
	if n == 0 {
		return nil
	}
	return slices.Clone(d.raw(n))
}

func (d *decoder) strs() []string {
	n := d.length(1) // each string is at least its length byte
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) bytesList() [][]byte {
	n := d.length(1)
	if n == 0 {
		return nil
	}
	out := make([][]byte, n)
	for i := range out {
		m := d.uvarint()
		if m == 0 {
			continue
		}
		if m-1 > uint64(len(d.buf)) {
			d.fail(errShort)
			return nil
		}
		out[i] = slices.Clone(d.raw(int(m - 1)))
	}
	return out
}

func (d *decoder) bytesMap() map[string][]byte {
	n := d.length(2) // a key and a value, each at least its length byte
	if n == 0 {
		return nil
	}
	out := make(map[string][]byte, n)
	for range n {
		k := d.str()
		if _, dup := out[k]; dup && d.err == nil {
			d.fail(fmt.Errorf("binary record: map key %q twice", k))
		}
		out[k] = d.bytes()
	}
	return out
}

func (d *decoder) time() time.Time {
	if d.err != nil {
		return time.Time{}
	}
	sec, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail(errShort)
		return time.Time{}
	}
	d.buf = d.buf[n:]
	nsec := d.uvarint()
	if d.err == nil && nsec >= uint64(time.Second) {
		d.fail(fmt.Errorf("binary record: %d nanoseconds", nsec))
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// end returns the first error, or errTrailing if bytes are left.
func (d *decoder) end() error {
	if d.err == nil && len(d.buf) != 0 {
		return errTrailing
	}
	return d.err
}

// Tokens (oauth.go). Format 1 holds, in order: kind, client ID, username,
// scopes, code hash, credential ID, hashes, auth time, requested at,
// expires at, created at, rotated at (uvarint 0 for absent, 1 followed by
// the time), consented.

func encodeToken(r *tokenRecord) []byte {
	e := newEncoder(160 + 33*len(r.Hashes))
	e.str(r.Kind)
	e.str(r.ClientID)
	e.str(r.Username)
	e.strs(r.Scopes)
	e.bytes(r.CodeHash)
	e.str(r.CredentialID)
	e.bytesList(r.Hashes)
	e.time(r.AuthTime)
	e.time(r.RequestedAt)
	e.time(r.ExpiresAt)
	e.time(r.CreatedAt)
	if r.RotatedAt == nil {
		e.uvarint(0)
	} else {
		e.uvarint(1)
		e.time(*r.RotatedAt)
	}
	e.bytesMap(r.Consented)
	return e.buf
}

// decodeToken reads a token record in either form. Nothing of raw is
// aliased by the result.
func decodeToken(raw []byte) (*tokenRecord, error) {
	r := new(tokenRecord)
	if len(raw) == 0 || raw[0] != formatBinaryV1 {
		return r, json.Unmarshal(raw, r)
	}
	d := newDecoder(raw)
	r.Kind = d.str()
	r.ClientID = d.str()
	r.Username = d.str()
	r.Scopes = d.strs()
	r.CodeHash = d.bytes()
	r.CredentialID = d.str()
	r.Hashes = d.bytesList()
	r.AuthTime = d.time()
	r.RequestedAt = d.time()
	r.ExpiresAt = d.time()
	r.CreatedAt = d.time()
	switch d.uvarint() {
	case 0:
	case 1:
		at := d.time()
		r.RotatedAt = &at
	default:
		d.fail(errors.New("binary record: rotated at: bad presence flag"))
	}
	r.Consented = d.bytesMap()
	return r, d.end()
}

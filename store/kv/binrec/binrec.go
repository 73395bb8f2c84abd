package binrec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Format1 is the format byte that starts every record of format 1.
const Format1 = 0x01

// IsBinary reports whether raw is a binary record (starts with Format1)
// rather than JSON (which starts with '{').
func IsBinary(raw []byte) bool { return len(raw) != 0 && raw[0] == Format1 }

// errTrailing and errShort are the decoding errors of the binary form.
var (
	errShort    = errors.New("binary record: truncated")
	errTrailing = errors.New("binary record: trailing bytes")
)

// Encoder appends the fields of one binary record.
type Encoder struct{ buf []byte }

// NewEncoder starts a record of format 1 with room for size bytes.
func NewEncoder(size int) *Encoder {
	e := &Encoder{buf: make([]byte, 0, size)}
	e.buf = append(e.buf, Format1)
	return e
}

// Record returns the record encoded so far.
func (e *Encoder) Record() []byte { return e.buf }

// Uvarint writes v as an unsigned varint (a presence flag, a count).
func (e *Encoder) Uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

// Str writes a string field.
func (e *Encoder) Str(s string) {
	e.Uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// Bytes writes a byte string field.
func (e *Encoder) Bytes(b []byte) {
	e.Uvarint(uint64(len(b)))
	e.buf = append(e.buf, b...)
}

// Strs writes a list of strings.
func (e *Encoder) Strs(ss []string) {
	e.Uvarint(uint64(len(ss)))
	for _, s := range ss {
		e.Str(s)
	}
}

// BytesList writes each element's length plus one, 0 standing for a nil
// element, so that nil and empty elements read back as they were.
func (e *Encoder) BytesList(bs [][]byte) {
	e.Uvarint(uint64(len(bs)))
	for _, b := range bs {
		if b == nil {
			e.Uvarint(0)
			continue
		}
		e.Uvarint(uint64(len(b)) + 1)
		e.buf = append(e.buf, b...)
	}
}

// BytesMap writes a map, its keys in sorted order.
func (e *Encoder) BytesMap(m map[string][]byte) {
	e.Uvarint(uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.Str(k)
		e.Bytes(m[k])
	}
}

// Time writes t as Unix seconds and nanoseconds; its location is not kept.
func (e *Encoder) Time(t time.Time) {
	e.buf = binary.AppendVarint(e.buf, t.Unix())
	e.Uvarint(uint64(t.Nanosecond()))
}

// Decoder reads the fields of one binary record; the first error sticks
// and every later read returns zero values.
type Decoder struct {
	buf []byte
	err error
}

// NewDecoder checks the format byte of raw.
func NewDecoder(raw []byte) *Decoder {
	if len(raw) == 0 || raw[0] != Format1 {
		return &Decoder{err: fmt.Errorf("binary record: unknown format %q", raw[:min(len(raw), 1)])}
	}
	return &Decoder{buf: raw[1:]}
}

// Fail records err as the decoder's error unless one is set already, and
// stops reading.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.buf = nil
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.Fail(errShort)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// length reads a length or a count of items of at least minSize bytes
// each, refusing one the rest of the record cannot hold.
func (d *Decoder) length(minSize int) int {
	n := d.Uvarint()
	if d.err == nil && n > uint64(len(d.buf)/minSize) {
		d.Fail(errShort)
		return 0
	}
	return int(n)
}

// raw returns the next n bytes, aliasing the record.
func (d *Decoder) raw(n int) []byte {
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

// Str reads a string field.
func (d *Decoder) Str() string { return string(d.raw(d.length(1))) }

// Bytes returns a copy; an empty value reads as nil, as JSON's omitempty
// fields do.
func (d *Decoder) Bytes() []byte {
	n := d.length(1)
	if n == 0 {
		return nil
	}
	return slices.Clone(d.raw(n))
}

// Strs reads a list of strings; an empty list reads as nil.
func (d *Decoder) Strs() []string {
	n := d.length(1) // each string is at least its length byte
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.Str()
	}
	return out
}

// BytesList reads a list of byte strings, nil and empty elements as
// they were written.
func (d *Decoder) BytesList() [][]byte {
	n := d.length(1)
	if n == 0 {
		return nil
	}
	out := make([][]byte, n)
	for i := range out {
		m := d.Uvarint()
		if m == 0 {
			continue
		}
		if m-1 > uint64(len(d.buf)) {
			d.Fail(errShort)
			return nil
		}
		out[i] = slices.Clone(d.raw(int(m - 1)))
	}
	return out
}

// BytesMap reads a map, refusing a key that appears twice; an empty map
// reads as nil.
func (d *Decoder) BytesMap() map[string][]byte {
	n := d.length(2) // a key and a value, each at least its length byte
	if n == 0 {
		return nil
	}
	out := make(map[string][]byte, n)
	for range n {
		k := d.Str()
		if _, dup := out[k]; dup && d.err == nil {
			d.Fail(fmt.Errorf("binary record: map key %q twice", k))
		}
		out[k] = d.Bytes()
	}
	return out
}

// Time reads a time, in UTC.
func (d *Decoder) Time() time.Time {
	if d.err != nil {
		return time.Time{}
	}
	sec, n := binary.Varint(d.buf)
	if n <= 0 {
		d.Fail(errShort)
		return time.Time{}
	}
	d.buf = d.buf[n:]
	nsec := d.Uvarint()
	if d.err == nil && nsec >= uint64(time.Second) {
		d.Fail(fmt.Errorf("binary record: %d nanoseconds", nsec))
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// More reports whether bytes are left to read (and no error is set): an
// optional field at the end of a record, absent in records written before
// it existed.
func (d *Decoder) More() bool { return d.err == nil && len(d.buf) != 0 }

// End returns the first error, or errTrailing if bytes are left.
func (d *Decoder) End() error {
	if d.err == nil && len(d.buf) != 0 {
		return errTrailing
	}
	return d.err
}

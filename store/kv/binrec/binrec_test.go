package binrec_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store/kv/binrec"
)

// TestRoundTrip writes one field of every kind and reads it back: nil and
// empty elements of a byte-string list stay apart, map keys come out
// whatever order they went in, times come back as the same instant in UTC.
func TestRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 999_999_999, time.FixedZone("CET", 3600))
	list := [][]byte{nil, {}, {1, 2}}
	m := map[string][]byte{"b": {2}, "a": {1}}
	e := binrec.NewEncoder(8)
	e.Str("alice")
	e.Bytes([]byte{0, 1})
	e.Strs([]string{"x", ""})
	e.BytesList(list)
	e.BytesMap(m)
	e.Time(at)
	e.Time(time.Time{})
	e.Uvarint(1 << 40)
	raw := e.Record()
	if !binrec.IsBinary(raw) || binrec.IsBinary([]byte(`{}`)) || binrec.IsBinary(nil) {
		t.Fatalf("IsBinary(%x) false, or true for JSON or nothing", raw)
	}

	d := binrec.NewDecoder(raw)
	if s := d.Str(); s != "alice" {
		t.Errorf("Str = %q", s)
	}
	if b := d.Bytes(); !bytes.Equal(b, []byte{0, 1}) {
		t.Errorf("Bytes = %x", b)
	}
	if ss := d.Strs(); !reflect.DeepEqual(ss, []string{"x", ""}) {
		t.Errorf("Strs = %q", ss)
	}
	if got := d.BytesList(); !reflect.DeepEqual(got, list) {
		t.Errorf("BytesList = %#v, want %#v", got, list)
	}
	if got := d.BytesMap(); !reflect.DeepEqual(got, m) {
		t.Errorf("BytesMap = %v", got)
	}
	if got := d.Time(); !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("Time = %v, want %v in UTC", got, at)
	}
	if got := d.Time(); !got.IsZero() {
		t.Errorf("zero Time reads as %v", got)
	}
	if v := d.Uvarint(); v != 1<<40 {
		t.Errorf("Uvarint = %d", v)
	}
	if err := d.End(); err != nil {
		t.Fatal(err)
	}
	// The map's keys are written sorted, so one map has one encoding.
	e2 := binrec.NewEncoder(0)
	e2.BytesMap(map[string][]byte{"a": {1}, "b": {2}})
	if want := []byte{binrec.Format1, 2, 1, 'a', 1, 1, 1, 'b', 1, 2}; !bytes.Equal(e2.Record(), want) {
		t.Errorf("BytesMap encodes %x, want %x", e2.Record(), want)
	}
}

// TestDecoderRefuses: every malformed record is an error from End, and
// no length or count is believed beyond the bytes that are left.
func TestDecoderRefuses(t *testing.T) {
	f := byte(binrec.Format1)
	tests := []struct {
		name string
		want string // in the error
		raw  []byte
		read func(*binrec.Decoder)
	}{
		{"no format byte", "unknown format", nil, func(d *binrec.Decoder) { d.Str() }},
		{"JSON", "unknown format", []byte(`{"a":1}`), func(d *binrec.Decoder) { d.Str() }},
		{"format byte only", "truncated", []byte{f}, func(d *binrec.Decoder) { d.Str() }},
		{"length past the end", "truncated", []byte{f, 0x7f, 'a'}, func(d *binrec.Decoder) { d.Str() }},
		{"huge count", "truncated", []byte{f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(d *binrec.Decoder) { d.Strs() }},
		{"list element past the end", "truncated", []byte{f, 1, 3, 'a'}, func(d *binrec.Decoder) { d.BytesList() }},
		{"overlong varint", "truncated", append([]byte{f}, bytes.Repeat([]byte{0x80}, 11)...), func(d *binrec.Decoder) { d.Uvarint() }},
		{"nanoseconds out of range", "1000000000 nanoseconds", []byte{f, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03}, func(d *binrec.Decoder) { d.Time() }},
		{"map key twice", `map key "a" twice`, []byte{f, 2, 1, 'a', 0, 1, 'a', 0}, func(d *binrec.Decoder) { d.BytesMap() }},
		{"trailing byte", "trailing bytes", []byte{f, 1, 'a', 0}, func(d *binrec.Decoder) { d.Str() }},
		{"failed by the caller", "too large", []byte{f, 0}, func(d *binrec.Decoder) { d.Fail(bytes.ErrTooLarge); d.Uvarint() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := binrec.NewDecoder(tt.raw)
			tt.read(d)
			if err := d.End(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%x: End = %v, want %q", tt.raw, err, tt.want)
			}
		})
	}
}

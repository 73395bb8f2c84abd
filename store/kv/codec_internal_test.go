package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv/binrec"
)

// sameToken compares two token records field by field; times compare
// by instant and location (decoding returns UTC).
func sameToken(a, b *tokenRecord) bool {
	return reflect.DeepEqual(a, b)
}

func TestTokenCodecRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name string
		rec  tokenRecord
	}{
		{"empty", tokenRecord{}},
		{"SAD", tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", Scopes: []string{"credential"},
			CodeHash: fuzzHash, CredentialID: "cred-1", Hashes: [][]byte{fuzzHash, fuzzHash}, AuthTime: t0,
			RequestedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), CreatedAt: t0}},
		{"access token with consent", tokenRecord{Kind: "access", ClientID: "rp", Username: "alice",
			Scopes: []string{"openid", "email", ""}, ExpiresAt: t0, CreatedAt: t0,
			Consented: map[string][]byte{"email": fuzzHash, "name": {1}, "zz": bytes.Repeat([]byte{2}, 64)}}},
		{"nil and empty hash elements", tokenRecord{Kind: "sad", Hashes: [][]byte{nil, {}, {0}}}},
		{"times far apart", tokenRecord{AuthTime: time.Unix(math.MinInt64/4, 0).UTC(), RequestedAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
			ExpiresAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), CreatedAt: time.Unix(1<<40, 999).UTC()}},
		{"non-ASCII text", tokenRecord{Kind: "access", ClientID: "r\x00p", Username: "ålice"}},
		{"SAD with its secret generation", tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", Hashes: [][]byte{fuzzHash},
			ExpiresAt: t0, CreatedAt: t0, SecretGen: 1<<64 - 1}},
		{"rotated refresh token", tokenRecord{Kind: "refresh", ClientID: "rp", Username: "alice", CodeHash: fuzzHash,
			ExpiresAt: t0, CreatedAt: t0, RotatedAt: &t0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := encodeToken(&tt.rec)
			if raw[0] != binrec.Format1 {
				t.Fatalf("format byte %#x", raw[0])
			}
			got, err := decodeToken(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !sameToken(got, &tt.rec) {
				t.Fatalf("decoded %+v, want %+v", got, &tt.rec)
			}
			// Nothing of the stored bytes is aliased.
			for i := range raw {
				raw[i] ^= 0xff
			}
			if !sameToken(got, &tt.rec) {
				t.Fatalf("changing the stored bytes changed the record: %+v", got)
			}
		})
	}
}

// sadRecord is a SAD's record as a signHash reads it, and its JSON form.
func sadRecord(tb testing.TB) (tokenRecord, []byte) {
	tb.Helper()
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 123456789, time.UTC)
	rec := tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", CredentialID: "cred-1",
		Hashes: [][]byte{fuzzHash}, AuthTime: t0, RequestedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), CreatedAt: t0}
	js, err := json.Marshal(&rec)
	if err != nil {
		tb.Fatal(err)
	}
	return rec, js
}

// TestTokenCodecSmaller: the binary form of a SAD is well under its JSON
// form, which is what makes a commit write fewer pages.
func TestTokenCodecSmaller(t *testing.T) {
	rec, js := sadRecord(t)
	bin := encodeToken(&rec)
	t.Logf("SAD: JSON %d bytes, binary %d bytes", len(js), len(bin))
	if 2*len(bin) > len(js) {
		t.Errorf("binary %d bytes is more than half of JSON's %d", len(bin), len(js))
	}
}

func TestTokenCodecRefuses(t *testing.T) {
	valid := encodeToken(&tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", Hashes: [][]byte{fuzzHash},
		Consented: map[string][]byte{"a": {1}}})
	withGen := encodeToken(&tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", Hashes: [][]byte{fuzzHash},
		Consented: map[string][]byte{"a": {1}}, SecretGen: 300})
	tests := []struct {
		name string
		raw  []byte
	}{
		{"format byte only", []byte{binrec.Format1}},
		{"truncated", valid[:len(valid)-1]},
		{"trailing byte", append(bytes.Clone(valid), 0)},
		{"trailing byte after the secret generation", append(bytes.Clone(withGen), 1)},
		{"secret generation 0 written out", append(bytes.Clone(valid), 0)},
		{"length past the end", []byte{binrec.Format1, 0x7f, 'a'}},
		{"huge count", append([]byte{binrec.Format1, 0, 0, 0}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{"overlong varint", append([]byte{binrec.Format1}, bytes.Repeat([]byte{0x80}, 11)...)},
		{"nanoseconds out of range", encodeWithNanos(1_000_000_000)},
		{"duplicate consent item", encodeDuplicateConsent()},
	}
	if _, err := decodeToken(encodeWithNanos(999_999_999)); err != nil {
		t.Fatalf("the largest nanoseconds refused: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeToken(tt.raw); err == nil {
				t.Errorf("decodeToken(%x) accepted it", tt.raw)
			}
		})
	}
}

// encodeWithNanos is a token record whose auth time has nsec nanoseconds.
func encodeWithNanos(nsec uint64) []byte {
	e := binrec.NewEncoder(32)
	e.Str("sad")
	e.Str("rp")
	e.Str("alice")
	e.Strs(nil)
	e.Bytes(nil)
	e.Str("")
	e.BytesList(nil)
	e.Uvarint(0) // auth time: second 0 (the varint 0 is the byte 0)
	e.Uvarint(nsec)
	for range 3 {
		e.Time(time.Time{})
	}
	e.Uvarint(0) // not rotated
	e.BytesMap(nil)
	return e.Record()
}

// encodeDuplicateConsent is a token record naming one consent item twice.
func encodeDuplicateConsent() []byte {
	e := binrec.NewEncoder(64)
	for range 3 {
		e.Str("x")
	}
	e.Strs(nil)
	e.Bytes(nil)
	e.Str("")
	e.BytesList(nil)
	for range 4 {
		e.Time(time.Time{})
	}
	e.Uvarint(2)
	for range 2 {
		e.Str("a")
		e.Bytes([]byte{1})
	}
	return e.Record()
}

// FuzzTokenCodec decodes any bytes as a token record. It never panics; a
// binary record that decodes encodes back to one that decodes the same,
// and that encoding is stable.
func FuzzTokenCodec(f *testing.F) {
	f.Add(binaryTokenSeed())
	f.Add(encodeDuplicateConsent())
	f.Add(encodeWithNanos(999_999_999))
	f.Add([]byte(`{"kind":"sad","hashes":["qw=="]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := decodeToken(raw)
		if err != nil || len(raw) == 0 || raw[0] != binrec.Format1 {
			return
		}
		enc := encodeToken(rec)
		again, err := decodeToken(enc)
		if err != nil {
			t.Fatalf("%x decodes to %+v, whose encoding %x does not decode: %v", raw, rec, enc, err)
		}
		if !sameToken(again, rec) {
			t.Fatalf("%x: decoded %+v, re-encoded and decoded %+v", raw, rec, again)
		}
		if enc2 := encodeToken(again); !bytes.Equal(enc2, enc) {
			t.Fatalf("encoding not stable: %x then %x", enc, enc2)
		}
	})
}

// TestTokenCodecCarriesEveryField fills every field of tokenRecord with a
// value that is not its zero and checks that the binary form carries it:
// a field added to the record without its place in encodeToken and
// decodeToken fails here instead of being dropped on the next write.
func TestTokenCodecCarriesEveryField(t *testing.T) {
	var rec tokenRecord
	v := reflect.ValueOf(&rec).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Interface().(type) {
		case string:
			f.SetString(v.Type().Field(i).Name)
		case []string:
			f.Set(reflect.ValueOf([]string{"a", "b"}))
		case []byte:
			f.Set(reflect.ValueOf([]byte{1, 2, byte(i)}))
		case [][]byte:
			f.Set(reflect.ValueOf([][]byte{{3}, {4, byte(i)}}))
		case time.Time:
			f.Set(reflect.ValueOf(time.Unix(int64(1e9+i), int64(i)).UTC()))
		case map[string][]byte:
			f.Set(reflect.ValueOf(map[string][]byte{"k": {byte(i)}}))
		case *time.Time:
			at := time.Unix(int64(1e9+i), int64(i)).UTC()
			f.Set(reflect.ValueOf(&at))
		case uint64:
			f.SetUint(uint64(1e9 + i))
		default:
			t.Fatalf("tokenRecord.%s has type %s, which the binary form has no encoding for", v.Type().Field(i).Name, f.Type())
		}
	}
	got, err := decodeToken(encodeToken(&rec))
	if err != nil {
		t.Fatal(err)
	}
	gv := reflect.ValueOf(got).Elem()
	for i := range v.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), v.Field(i).Interface()) {
			t.Errorf("tokenRecord.%s: wrote %v, read %v: encodeToken/decodeToken do not carry it",
				v.Type().Field(i).Name, v.Field(i).Interface(), gv.Field(i).Interface())
		}
	}
}

// BenchmarkTokenDecode decodes a SAD record in its JSON and binary forms.
func BenchmarkTokenDecode(b *testing.B) {
	rec, js := sadRecord(b)
	for _, form := range []struct {
		name string
		raw  []byte
	}{{"json", js}, {"binary", encodeToken(&rec)}} {
		b.Run(form.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeToken(form.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTokenDecodedOnce: a transaction that reads a token and then deletes
// it decodes the record once; what Token handed out is a copy (changing it
// does not change what DeleteToken removes), and any write to the tokens
// bucket forgets the kept record.
func TestTokenDecodedOnce(t *testing.T) {
	db := openTestDB(t, nil)
	h, code := store.Fingerprint("sad"), store.Fingerprint("code")
	newSAD := func(user string) *store.Token {
		return &store.Token{Hash: h, Kind: store.TokenSAD, ClientID: "rp", Username: user, CredentialID: "c1",
			CodeHash: code, Hashes: [][]byte{fuzzHash}, ExpiresAt: time.Now().Add(time.Hour)}
	}
	err := db.Update(context.Background(), func(st store.Tx) error {
		tx := st.(*Tx)
		if err := tx.CreateToken(newSAD("alice")); err != nil {
			return err
		}
		first, err := tx.token(h)
		if err != nil {
			return err
		}
		if again, _ := tx.token(h); again != first {
			t.Error("the second read of the same token decoded it again")
		}
		tok, err := tx.Token(h)
		if err != nil {
			return err
		}
		tok.CodeHash[0] ^= 0xff
		tok.Hashes[0][0] ^= 0xff
		if first.CodeHash[0] != code[0] || first.Hashes[0][0] != fuzzHash[0] {
			t.Error("Token handed out the kept record's slices")
		}
		if err := tx.DeleteToken(h); err != nil {
			return err
		}
		if n := tx.kv.(testBolt).Bucket(bucketTokensByCode).(testBucket).Stats().KeyN; n != 0 {
			t.Errorf("the code index kept %d entries", n)
		}
		if _, err := tx.Token(h); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Token after DeleteToken: %v", err)
		}
		// Written again under the same fingerprint: read afresh.
		if err := tx.CreateToken(newSAD("bob")); err != nil {
			return err
		}
		if tok, err := tx.Token(h); err != nil || tok.Username != "bob" {
			t.Errorf("Token after re-creating it: %+v, %v", tok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTokenCodecGenerationZero: a SAD of secret generation 0 is written
// as before the field existed (the generation, when set, is the only
// thing after the fields of the earlier form, so a signd without it reads
// such a record), and a record without it reads as generation 0.
func TestTokenCodecGenerationZero(t *testing.T) {
	rec := tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", Hashes: [][]byte{fuzzHash},
		Consented: map[string][]byte{"a": {1}}}
	zero := encodeToken(&rec)
	rec.SecretGen = 300
	if raw := encodeToken(&rec); !bytes.Equal(raw, binary.AppendUvarint(bytes.Clone(zero), 300)) {
		t.Fatalf("generation 300 encodes as %x, want the generation-0 form %x and the varint 300", raw, zero)
	}
	got, err := decodeToken(zero)
	if err != nil || got.SecretGen != 0 {
		t.Fatalf("decodeToken = %+v, %v; want generation 0", got, err)
	}
}

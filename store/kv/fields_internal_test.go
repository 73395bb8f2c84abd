package kv

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// TestRecordsCarryEveryField fills every field of every record type that
// has its own stored form (also fields added after this test was written),
// writes it as the stored JSON and reads it back: what comes back must be
// equal to what was written. A new field the record conversions forget
// fails here. Tokens have the same test for their binary form
// (TestTokenCodecCarriesEveryField); that no record handed out aliases the
// store is storetest's testCopies, on every backend.
func TestRecordsCarryEveryField(t *testing.T) {
	tests := []struct {
		name      string
		in        any
		roundTrip func(t *testing.T, v any) any
	}{
		{"User", &store.User{}, func(t *testing.T, v any) any {
			return viaJSON(t, userToRecord(v.(*store.User))).user()
		}},
		{"Client", &store.Client{}, func(t *testing.T, v any) any {
			return viaJSON(t, clientToRecord(v.(*store.Client))).client()
		}},
		{"Credential", &store.Credential{}, func(t *testing.T, v any) any {
			return viaJSON(t, credentialToRecord(v.(*store.Credential))).credential()
		}},
		{"AuthRequest", &store.AuthRequest{}, func(t *testing.T, v any) any {
			r := v.(*store.AuthRequest)
			return viaJSON(t, requestToRecord(r)).request(r.Hash)
		}},
		{"SigningKey", &store.SigningKey{}, func(t *testing.T, v any) any {
			return viaJSON(t, signingKeyToRecord(v.(*store.SigningKey))).signingKey()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			fill(reflect.ValueOf(tt.in), &n)
			out := tt.roundTrip(t, tt.in)
			if !reflect.DeepEqual(out, tt.in) {
				t.Errorf("read back differs:\n got %+v\nwant %+v", out, tt.in)
			}
		})
	}
}

// viaJSON encodes r as it is stored and decodes it again.
func viaJSON[R any](t *testing.T, r *R) *R {
	t.Helper()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out := new(R)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// fill sets every field reachable from v to a distinct non-zero value;
// slices and maps get two elements.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2030, 1, 2, 3, 4, *n, *n, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n % 100))
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

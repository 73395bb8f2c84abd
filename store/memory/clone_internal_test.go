package memory

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// TestCloneIsDeep fills every field of every record type (also fields added
// after this test was written) and checks that its clone is equal and
// shares no slice, map or pointer with it: a new field the clone functions
// forget to copy fails here.
func TestCloneIsDeep(t *testing.T) {
	tests := []struct {
		name  string
		in    any
		clone func(any) any
	}{
		{"User", &store.User{}, func(v any) any { return cloneUser(v.(*store.User)) }},
		{"Client", &store.Client{}, func(v any) any { return cloneClient(v.(*store.Client)) }},
		{"Credential", &store.Credential{}, func(v any) any { return cloneCredential(v.(*store.Credential)) }},
		{"Token", &store.Token{}, func(v any) any { return cloneToken(v.(*store.Token)) }},
		{"AuthRequest", &store.AuthRequest{}, func(v any) any { return cloneRequest(v.(*store.AuthRequest)) }},
		{"AuthCode", &store.AuthCode{}, func(v any) any { return cloneCode(v.(*store.AuthCode)) }},
		{"Session", &store.Session{}, func(v any) any { return cloneSession(v.(*store.Session)) }},
		{"SigningKey", &store.SigningKey{}, func(v any) any { return cloneSigningKey(v.(*store.SigningKey)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			fill(reflect.ValueOf(tt.in), &n)
			out := tt.clone(tt.in)
			if !reflect.DeepEqual(out, tt.in) {
				t.Errorf("clone differs:\n got %+v\nwant %+v", out, tt.in)
			}
			for _, path := range shared(reflect.ValueOf(out), reflect.ValueOf(tt.in), tt.name) {
				t.Errorf("clone shares %s with the original", path)
			}
		})
	}
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

// shared returns the paths at which a and b hold the same slice, map or
// pointer.
func shared(a, b reflect.Value, path string) []string {
	var out []string
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
		out = append(out, shared(a.Elem(), b.Elem(), path)...)
	case reflect.Struct:
		if a.Type() == timeType {
			return nil
		}
		for i := range a.NumField() {
			out = append(out, shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)...)
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
		for i := range min(a.Len(), b.Len()) {
			out = append(out, shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
		for _, k := range a.MapKeys() {
			if e := b.MapIndex(k); e.IsValid() {
				out = append(out, shared(a.MapIndex(k), e, fmt.Sprintf("%s[%v]", path, k))...)
			}
		}
	}
	return out
}

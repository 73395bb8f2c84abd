package keyobj

import (
	"crypto/rsa"
	"errors"
	"math/big"
	"testing"

	"github.com/signd/signd/hsm/ckr"
)

func TestKeyPolicy(t *testing.T) {
	n2048 := new(big.Int).Lsh(big.NewInt(1), 2047)
	n1024 := new(big.Int).Lsh(big.NewInt(1), 1023)
	good := KeyAttrs{
		Sign: true, Sensitive: true, AlwaysSensitive: true, NeverExtractable: true, Local: true,
		Pub: &rsa.PublicKey{N: n2048, E: 65537},
	}
	tests := []struct {
		name          string
		edit          func(*KeyAttrs)
		allowImported bool
		want          error
	}{
		{"generated", func(*KeyAttrs) {}, false, nil},
		{"no sign", func(a *KeyAttrs) { a.Sign = false }, false, ckr.ErrKeyPolicy},
		{"not sensitive", func(a *KeyAttrs) { a.Sensitive = false }, true, ckr.ErrKeyPolicy},
		{"extractable", func(a *KeyAttrs) { a.Extractable = true }, true, ckr.ErrKeyPolicy},
		{"imported", func(a *KeyAttrs) { a.Local, a.AlwaysSensitive, a.NeverExtractable = false, false, false }, false, ckr.ErrKeyPolicy},
		{"imported allowed", func(a *KeyAttrs) { a.Local, a.AlwaysSensitive, a.NeverExtractable = false, false, false }, true, nil},
		{"was extractable", func(a *KeyAttrs) { a.NeverExtractable = false }, false, ckr.ErrKeyPolicy},
		{"1024 bits", func(a *KeyAttrs) { a.Pub = &rsa.PublicKey{N: n1024, E: 65537} }, false, ckr.ErrWeakKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := good
			tt.edit(&a)
			err := CheckPolicy(a, 2048, tt.allowImported)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("CheckPolicy: %v, want %v", err, tt.want)
			}
		})
	}
}

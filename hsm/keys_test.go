package hsm

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/keyobj"
)

func TestGenerateRSA(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		label string
		bits  int
	}{
		{"gen-2048", 2048}, // sharedKey, generated in TestMain
		{"gen-3072", 3072},
		{"gen-4096", 4096},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			info := sharedKey
			if tt.bits != 2048 {
				mechanism(t, pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN, "CKM_RSA_PKCS_KEY_PAIR_GEN", tt.bits)
				var err error
				if info, err = shared.GenerateRSA(ctx, tt.label, tt.bits); err != nil {
					lacksIfUnsupported(t, fmt.Sprintf("CKM_RSA_PKCS_KEY_PAIR_GEN of %d bits", tt.bits), err)
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = shared.DestroyKey(ctx, info.ID) })
				if info.Label != tt.label {
					t.Errorf("label %q, want %q", info.Label, tt.label)
				}
			}
			if len(info.ID) != 16 {
				t.Errorf("ID is %d bytes, want 16", len(info.ID))
			}
			rsaPub := info.Public.(*rsa.PublicKey)
			if info.Bits != tt.bits || rsaPub.N.BitLen() != tt.bits || rsaPub.E != 65537 {
				t.Errorf("bits %d, modulus %d bits, e=%d; want %d bits, e=65537", info.Bits, rsaPub.N.BitLen(), rsaPub.E, tt.bits)
			}

			priv, err := rawAttrs(shared, pkcs11.CKO_PRIVATE_KEY, info.ID,
				pkcs11.CKA_SENSITIVE, pkcs11.CKA_EXTRACTABLE, pkcs11.CKA_DECRYPT, pkcs11.CKA_UNWRAP,
				pkcs11.CKA_SIGN_RECOVER, pkcs11.CKA_DERIVE, pkcs11.CKA_SIGN, pkcs11.CKA_PRIVATE,
				pkcs11.CKA_TOKEN, pkcs11.CKA_LOCAL, pkcs11.CKA_ALWAYS_SENSITIVE, pkcs11.CKA_NEVER_EXTRACTABLE)
			if err != nil {
				t.Fatal(err)
			}
			wantPriv := map[uint]bool{
				pkcs11.CKA_SENSITIVE: true, pkcs11.CKA_EXTRACTABLE: false, pkcs11.CKA_DECRYPT: false,
				pkcs11.CKA_UNWRAP: false, pkcs11.CKA_SIGN_RECOVER: false, pkcs11.CKA_DERIVE: false,
				pkcs11.CKA_SIGN: true, pkcs11.CKA_PRIVATE: true, pkcs11.CKA_TOKEN: true,
				pkcs11.CKA_LOCAL: true, pkcs11.CKA_ALWAYS_SENSITIVE: true, pkcs11.CKA_NEVER_EXTRACTABLE: true,
			}
			wantPub := map[uint]bool{
				pkcs11.CKA_VERIFY: true, pkcs11.CKA_ENCRYPT: false, pkcs11.CKA_WRAP: false, pkcs11.CKA_TOKEN: true,
			}
			// A token that sets usages itself (tpm2-pkcs11 signs PKCS#1
			// v1.5 as a raw decrypt, so its signing keys decrypt and their
			// public halves encrypt) keeps them only where signd reports
			// it (KeyInfo.Defects).
			if reported(info, "CKA_DECRYPT") {
				wantPriv[pkcs11.CKA_DECRYPT], wantPub[pkcs11.CKA_ENCRYPT] = true, true
			}
			if reported(info, "CKA_UNWRAP") {
				wantPriv[pkcs11.CKA_UNWRAP], wantPub[pkcs11.CKA_WRAP] = true, true
			}
			checkBools(t, "private", priv, wantPriv)

			pub, err := rawAttrs(shared, pkcs11.CKO_PUBLIC_KEY, info.ID,
				pkcs11.CKA_VERIFY, pkcs11.CKA_ENCRYPT, pkcs11.CKA_WRAP, pkcs11.CKA_TOKEN)
			if err != nil {
				t.Fatal(err)
			}
			checkBools(t, "public", pub, wantPub)

			// The private exponent cannot be read.
			_, err = rawAttrs(shared, pkcs11.CKO_PRIVATE_KEY, info.ID, pkcs11.CKA_PRIVATE_EXPONENT)
			if !unreadable(err) {
				t.Errorf("reading CKA_PRIVATE_EXPONENT: %v, want CKR_ATTRIBUTE_SENSITIVE or CKR_ATTRIBUTE_TYPE_INVALID", err)
			}

			signAndVerify(t, shared, info.ID, info.Public)
		})
	}
}

// reported says whether signd reported the key's attribute attr as a
// defect of the token (KeyInfo.Defects names it).
func reported(info *KeyInfo, attr string) bool {
	for _, d := range info.Defects {
		if strings.Contains(d, attr) {
			return true
		}
	}
	return false
}

func checkBools(t *testing.T, what string, got map[uint][]byte, want map[uint]bool) {
	t.Helper()
	for typ, w := range want {
		v, ok := got[typ]
		if !ok {
			t.Errorf("%s key: attribute 0x%x missing", what, typ)
			continue
		}
		if keyobj.AttrBool(v) != w {
			t.Errorf("%s key: attribute 0x%x = %v, want %v", what, typ, keyobj.AttrBool(v), w)
		}
	}
}

func TestGenerateRSARefuses(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		label string
		bits  int
		want  error
	}{
		{"duplicate label", sharedKey.Label, 2048, ErrLabelExists},
		{"1024 bits", "refused-1024", 1024, ErrUnsupportedAlgorithm},
		{"2047 bits", "refused-2047", 2047, ErrUnsupportedAlgorithm},
		{"8192 bits", "refused-8192", 8192, ErrUnsupportedAlgorithm},
		{"0 bits", "refused-0", 0, ErrUnsupportedAlgorithm},
		{"empty label", "", 2048, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(mustKeys(t, shared))
			info, err := shared.GenerateRSA(ctx, tt.label, tt.bits)
			if err == nil {
				_ = shared.DestroyKey(ctx, info.ID)
				t.Fatalf("GenerateRSA(%q, %d) succeeded", tt.label, tt.bits)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if after := len(mustKeys(t, shared)); after != before {
				t.Errorf("%d keys before, %d after", before, after)
			}
		})
	}
}

func TestGenerateRSABelowMinimum(t *testing.T) {
	cfg := config(mainTok)
	cfg.MinRSABits = 3072
	tok := openTest(t, cfg, options{})
	_, err := tok.GenerateRSA(context.Background(), "too-small", 2048)
	if !errors.Is(err, ErrWeakKey) || !errors.Is(err, ErrKeyPolicy) {
		t.Fatalf("error %v, want ErrWeakKey", err)
	}
	// An existing 2048-bit key is refused for signing too.
	if _, err := tok.Key(context.Background(), sharedKey.ID); !errors.Is(err, ErrWeakKey) {
		t.Fatalf("Key: %v, want ErrWeakKey", err)
	}
}

func mustKeys(t *testing.T, tok *Token) []KeyInfo {
	t.Helper()
	keys, err := tok.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestKeys(t *testing.T) {
	keys := mustKeys(t, shared)
	i := slices.IndexFunc(keys, func(k KeyInfo) bool { return bytes.Equal(k.ID, sharedKey.ID) })
	if i < 0 {
		t.Fatalf("shared key %x not listed in %v", sharedKey.ID, keys)
	}
	k := keys[i]
	if k.Label != sharedKey.Label || k.Bits != 2048 || !k.Public.(*rsa.PublicKey).Equal(sharedKey.Public) {
		t.Errorf("listed %q %d bits, want %q 2048 bits with the generated public key", k.Label, k.Bits, sharedKey.Label)
	}
	if !slices.IsSortedFunc(keys, compareKeyInfo) {
		t.Errorf("keys not sorted by label")
	}
}

func TestKeyNotFound(t *testing.T) {
	ctx := context.Background()
	id := randomID(t)
	if _, err := shared.Key(ctx, id); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("Key: %v, want ErrKeyNotFound", err)
	}
	if _, err := shared.Key(ctx, nil); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("Key(nil): %v, want ErrKeyNotFound", err)
	}
	d := digestOf(crypto.SHA256, []byte("x"))
	if _, err := shared.SignDigest(ctx, id, crypto.SHA256, d); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("SignDigest: %v, want ErrKeyNotFound", err)
	}
	if err := shared.DestroyKey(ctx, id); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("DestroyKey: %v, want ErrKeyNotFound", err)
	}
}

func TestDestroyKey(t *testing.T) {
	ctx := context.Background()
	info, err := shared.GenerateRSA(ctx, "destroy-me", 2048)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Key(ctx, info.ID); err != nil { // cached now
		t.Fatal(err)
	}
	if err := shared.DestroyKey(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Key(ctx, info.ID); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("Key after DestroyKey: %v, want ErrKeyNotFound", err)
	}
	if n := countObjects(t, shared, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_ID, info.ID)}); n != 0 {
		t.Errorf("%d objects left with the ID", n)
	}
	// The label is free again.
	again, err := shared.GenerateRSA(ctx, "destroy-me", 2048)
	if err != nil {
		t.Fatalf("label not freed: %v", err)
	}
	if err := shared.DestroyKey(ctx, again.ID); err != nil {
		t.Fatal(err)
	}
}

func TestDestroyKeyWhileCachedElsewhere(t *testing.T) {
	// Another Token (think: another process) destroys a key this one has
	// cached: signing gets CKR_OBJECT_HANDLE_INVALID or
	// CKR_KEY_HANDLE_INVALID, recovers, and reports ErrKeyNotFound.
	ctx := context.Background()
	other := openTest(t, config(mainTok), options{})
	info, err := other.GenerateRSA(ctx, "destroyed-elsewhere", 2048)
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID
	tok := openTest(t, config(mainTok), options{})
	signAndVerify(t, tok, id, info.Public)
	if err := other.DestroyKey(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err = tok.SignDigest(ctx, id, crypto.SHA256, digestOf(crypto.SHA256, nil))
	if !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("sign with destroyed key: %v, want ErrKeyNotFound", err)
	}
}

func TestImportedKeyRefusedByDefault(t *testing.T) {
	id := randomID(t)
	importRSA(t, shared, "imported-refused", id, fixtureKey)
	t.Cleanup(func() { _ = shared.DestroyKey(context.Background(), id) })
	_, err := shared.Key(context.Background(), id)
	if !errors.Is(err, ErrKeyPolicy) {
		t.Fatalf("Key: %v, want ErrKeyPolicy", err)
	}
	t.Log(err)
}

func TestAmbiguousKey(t *testing.T) {
	cfg := config(mainTok)
	cfg.AllowImportedKeys = true
	tok := openTest(t, cfg, options{})
	id := randomID(t)
	importRSA(t, tok, "twin-1", id, fixtureKey)
	importRSA(t, tok, "twin-2", id, fixtureKey)
	t.Cleanup(func() {
		_ = tok.run(context.Background(), "cleanup", func(s pkcs11.SessionHandle) error {
			hs, err := tok.obj.FindAll(s, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_ID, id)})
			for _, h := range hs {
				_ = tok.lib.DestroyObject(s, h)
			}
			return err
		})
	})
	if _, err := tok.Key(context.Background(), id); !errors.Is(err, ErrAmbiguousKey) {
		t.Errorf("Key: %v, want ErrAmbiguousKey", err)
	}
	if err := tok.DestroyKey(context.Background(), id); !errors.Is(err, ErrAmbiguousKey) {
		t.Errorf("DestroyKey: %v, want ErrAmbiguousKey", err)
	}
}

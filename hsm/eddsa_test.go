package hsm

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/hsmtest"
)

// ed25519Test generates an Ed25519 key labelled after the test on tok and
// destroys it when the test ends; it skips (lacks) on a token without the
// mechanisms.
func ed25519Test(t *testing.T, tok *Token) *KeyInfo {
	t.Helper()
	ctx := context.Background()
	can, err := tok.CanEd25519(ctx)
	if err != nil {
		t.Fatalf("CanEd25519: %v", err)
	}
	if !can {
		lacks(t, "no CKM_EC_EDWARDS_KEY_PAIR_GEN with CKM_EDDSA")
	}
	info, err := tok.GenerateEd25519(ctx, "ed-"+t.Name())
	if err != nil {
		t.Fatalf("GenerateEd25519: %v", err)
	}
	t.Cleanup(func() {
		if err := tok.DestroyKey(context.Background(), info.ID); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	return info
}

// TestEd25519: SoftHSM2 2.6 makes a frozen Ed25519 key pair whose
// signatures crypto/ed25519 verifies; it is found by its label, listed by
// Keys, and refuses a digest scheme.
func TestEd25519(t *testing.T) {
	ctx := context.Background()
	info := ed25519Test(t, shared)
	pub, ok := info.Public.(ed25519.PublicKey)
	if !ok || info.Bits != 256 {
		t.Fatalf("public key %T, %d bits; want ed25519.PublicKey, 256", info.Public, info.Bits)
	}
	if len(info.Defects) > 0 && !mainTok.External {
		t.Errorf("SoftHSM2 left the key unfrozen: %v", info.Defects)
	}

	found, err := shared.KeyByLabel(ctx, info.Label)
	if err != nil {
		t.Fatalf("KeyByLabel: %v", err)
	}
	if string(found.ID) != string(info.ID) || !pub.Equal(found.Public) {
		t.Fatalf("KeyByLabel found %x %v, want %x %v", found.ID, found.Public, info.ID, pub)
	}
	key, err := shared.Ed25519Key(ctx, info.ID)
	if err != nil {
		t.Fatalf("Ed25519Key: %v", err)
	}
	msg := []byte("signd audit checkpoint\n42\n")
	sig, err := key.Sign(nil, msg, crypto.Hash(0))
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	if !ed25519.Verify(pub, msg, sig) {
		t.Fatal("crypto/ed25519 rejects the token's signature")
	}
	if _, err := key.Sign(nil, digestOf(crypto.SHA256, msg), crypto.SHA256); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Errorf("sign with SHA-256: %v, want ErrUnsupportedAlgorithm", err)
	}
	if _, err := shared.SignEd25519(ctx, info.ID, make([]byte, maxEd25519Message+1)); !errors.Is(err, ErrBadDigest) || !NotSigned(err) {
		t.Errorf("oversized message: %v, want ErrBadDigest and NotSigned", err)
	}
	// An RSA key is no Ed25519 key, and an Ed25519 key signs no digest.
	if _, err := shared.Ed25519Key(ctx, sharedKey.ID); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Errorf("Ed25519Key of an RSA key: %v, want ErrUnsupportedAlgorithm", err)
	}
	if _, err := shared.SignDigest(ctx, info.ID, crypto.SHA256, digestOf(crypto.SHA256, msg)); err == nil {
		t.Error("SignDigest with an Ed25519 key succeeded")
	}

	keys, err := shared.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, k := range keys {
		listed = listed || string(k.ID) == string(info.ID)
	}
	if !listed {
		t.Error("Keys does not list the Ed25519 key")
	}
	if _, err := shared.GenerateEd25519(ctx, info.Label); !errors.Is(err, ErrLabelExists) {
		t.Errorf("second key with the label: %v, want ErrLabelExists", err)
	}
}

// TestKeyByLabelMissing: no key with the label is ErrKeyNotFound, naming
// the label; an empty label is refused before the token is asked.
func TestKeyByLabelMissing(t *testing.T) {
	_, err := shared.KeyByLabel(context.Background(), "no such key "+t.Name())
	if !errors.Is(err, ErrKeyNotFound) || !strings.Contains(err.Error(), t.Name()) {
		t.Errorf("KeyByLabel: %v, want ErrKeyNotFound naming the label", err)
	}
	if _, err := shared.KeyByLabel(context.Background(), ""); err == nil {
		t.Error("empty label accepted")
	}
}

// TestEd25519Faults: a token without the mechanisms is refused before
// C_GenerateKeyPair; a failed C_Sign is NotSigned; a lost session is
// replaced and the signature made.
func TestEd25519Faults(t *testing.T) {
	ctx := context.Background()
	var fake *hsmtest.Faults
	cfg := config(faultTok)
	cfg.Wrap = func(real Ctx) Ctx { fake = hsmtest.Wrap(real); return fake }
	tok := openTest(t, cfg, options{})

	fake.Inject("GetMechanismInfo", hsmtest.Fault{Code: pkcs11.CKR_MECHANISM_INVALID})
	if can, err := tok.CanEd25519(ctx); err != nil || can {
		t.Fatalf("CanEd25519 without the mechanisms: %v, %v; want false, nil", can, err)
	}
	_, err := tok.GenerateEd25519(ctx, "ed-refused")
	if !errors.Is(err, ErrUnsupportedAlgorithm) || !strings.Contains(err.Error(), "CKM_EDDSA") {
		t.Errorf("GenerateEd25519 without the mechanisms: %v, want ErrUnsupportedAlgorithm naming CKM_EDDSA", err)
	}
	if n := fake.Calls("GenerateKeyPair"); n != 0 {
		t.Errorf("C_GenerateKeyPair called %d times on a token without the mechanism", n)
	}
	fake.Clear()

	info := ed25519Test(t, tok)
	msg := []byte("checkpoint")
	fake.FailOnce("Sign", pkcs11.CKR_DEVICE_MEMORY)
	if _, err := tok.SignEd25519(ctx, info.ID, msg); err == nil || !NotSigned(err) {
		t.Errorf("failed C_Sign: %v, want an error that is NotSigned", err)
	}
	fake.FailOnce("SignInit", pkcs11.CKR_SESSION_HANDLE_INVALID)
	sig, err := tok.SignEd25519(ctx, info.ID, msg)
	if err != nil {
		t.Fatalf("sign after a lost session: %v", err)
	}
	if !ed25519.Verify(info.Public.(ed25519.PublicKey), msg, sig) {
		t.Error("signature after recovery does not verify")
	}
}

package hsm

import (
	"context"
	"crypto"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/keyobj"
)

// simulatedOnSoftHSM2 skips a test that makes SoftHSM2 behave as another
// token: on another token the behaviour under the simulation is that
// token's, not SoftHSM2's, and its own tests (TestExternal*) cover it.
func simulatedOnSoftHSM2(t *testing.T) {
	t.Helper()
	if m := shared.Capabilities().Manufacturer; m != "SoftHSM project" {
		t.Skipf("simulates another token over SoftHSM2; this run's token is %q", m)
	}
}

// like220 is SoftHSM2 behaving as opencryptoki 3.8's soft token does: it
// reports Cryptoki 2.20, lists no EC mechanism, and refuses CKA_COPYABLE
// (a 2.40 attribute) in a generation template and in a C_GetAttributeValue
// of several attributes with CKR_ATTRIBUTE_TYPE_INVALID.
type like220 struct {
	Ctx
	generations atomic.Int32
}

func (c *like220) GetInfo() (pkcs11.Info, error) {
	info, err := c.Ctx.GetInfo()
	info.CryptokiVersion = pkcs11.Version{Major: 2, Minor: 20}
	return info, err
}

func (c *like220) GetMechanismList(slot uint) ([]*pkcs11.Mechanism, error) {
	ms, err := c.Ctx.GetMechanismList(slot)
	return slices.DeleteFunc(ms, func(m *pkcs11.Mechanism) bool {
		return m.Mechanism == pkcs11.CKM_EC_KEY_PAIR_GEN || m.Mechanism == pkcs11.CKM_ECDSA
	}), err
}

func hasCopyable(tmpl []*pkcs11.Attribute) bool {
	return slices.ContainsFunc(tmpl, func(a *pkcs11.Attribute) bool { return a.Type == pkcs11.CKA_COPYABLE })
}

func (c *like220) GenerateKeyPair(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, public, private []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	c.generations.Add(1)
	if hasCopyable(public) || hasCopyable(private) {
		return 0, 0, pkcs11.Error(pkcs11.CKR_ATTRIBUTE_TYPE_INVALID)
	}
	return c.Ctx.GenerateKeyPair(sh, m, public, private)
}

func (c *like220) GetAttributeValue(sh pkcs11.SessionHandle, o pkcs11.ObjectHandle, a []*pkcs11.Attribute) ([]*pkcs11.Attribute, error) {
	if hasCopyable(a) {
		return nil, pkcs11.Error(pkcs11.CKR_ATTRIBUTE_TYPE_INVALID)
	}
	return c.Ctx.GetAttributeValue(sh, o, a)
}

// TestCapabilitiesCryptoki220: on a Cryptoki 2.20 token without EC,
// RSA keys are generated and sign (no CKA_COPYABLE is asked for, and
// attributes are read around the one the token does not know), and an EC
// key is refused before the token is asked, naming the missing mechanism
// and what the token can make instead.
func TestCapabilitiesCryptoki220(t *testing.T) {
	simulatedOnSoftHSM2(t)
	ctx := context.Background()
	c := &like220{}
	cfg := config(mainTok)
	cfg.Wrap = func(real Ctx) Ctx { c.Ctx = real; return c }
	tok := openTest(t, cfg, options{})

	caps := tok.Capabilities()
	if caps.CryptokiVersion != "2.20" || caps.AtLeast(2, 40) || caps.Mechanism("CKM_EC_KEY_PAIR_GEN").Present || !caps.Mechanism("CKM_RSA_PKCS").Present {
		t.Fatalf("capabilities %+v", caps)
	}
	info, err := tok.GenerateRSA(ctx, "cryptoki-220", 2048)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tok.DestroyKey(ctx, info.ID) })
	signAndVerify(t, tok, info.ID, info.Public)
	if _, err := tok.Key(ctx, info.ID); err != nil {
		t.Fatal(err)
	}

	n := c.generations.Load()
	_, err = tok.GenerateEC(ctx, "cryptoki-220-ec", elliptic.P256())
	if !errors.Is(err, ErrUnsupportedAlgorithm) || !strings.Contains(err.Error(), "has no CKM_EC_KEY_PAIR_GEN") ||
		!strings.Contains(err.Error(), "use one of rsa-2048, rsa-3072, rsa-4096") {
		t.Fatalf("EC on a token without EC: %v", err)
	}
	if c.generations.Load() != n {
		t.Error("the token was asked for a key it cannot make")
	}
	if !tok.Available() {
		t.Error("token unavailable")
	}
	if got := caps.KeyTypes(); !slices.Equal(got, []string{"rsa-2048", "rsa-3072", "rsa-4096"}) {
		t.Errorf("KeyTypes %v", got)
	}
}

// TestCapabilitiesCopyableRefused: a token that claims 2.40 but refuses
// CKA_COPYABLE is retried without it, once, and later keys leave it out.
func TestCapabilitiesCopyableRefused(t *testing.T) {
	simulatedOnSoftHSM2(t)
	ctx := context.Background()
	c := &like220{}
	cfg := config(mainTok)
	cfg.Wrap = func(real Ctx) Ctx { c.Ctx = real; return liar240{c} }
	tok := openTest(t, cfg, options{})
	for i, label := range []string{"copyable-refused-1", "copyable-refused-2"} {
		n := c.generations.Load()
		info, err := tok.GenerateRSA(ctx, label, 2048)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tok.DestroyKey(ctx, info.ID) })
		if want := int32(2 - i); c.generations.Load()-n != want {
			t.Errorf("key %d: %d C_GenerateKeyPair calls, want %d", i, c.generations.Load()-n, want)
		}
	}
}

// liar240 reports Cryptoki 2.40 whatever the module says.
type liar240 struct{ Ctx }

func (c liar240) GetInfo() (pkcs11.Info, error) {
	info, err := c.Ctx.GetInfo()
	info.CryptokiVersion = pkcs11.Version{Major: 2, Minor: 40}
	return info, err
}

// fixedUsage is SoftHSM2 behaving as tpm2-pkcs11 1.9 does: it refuses a
// template whose CKA_DECRYPT or CKA_ENCRYPT is set explicitly to false
// with CKR_GENERAL_ERROR, and gives RSA private keys CKA_DECRYPT itself.
type fixedUsage struct {
	Ctx
	generations atomic.Int32
}

func (c *fixedUsage) GenerateKeyPair(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, public, private []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	c.generations.Add(1)
	explicit := func(a *pkcs11.Attribute) bool {
		return (a.Type == pkcs11.CKA_DECRYPT || a.Type == pkcs11.CKA_ENCRYPT) && !keyobj.AttrBool(a.Value)
	}
	if slices.ContainsFunc(public, explicit) || slices.ContainsFunc(private, explicit) {
		return 0, 0, pkcs11.Error(pkcs11.CKR_GENERAL_ERROR)
	}
	return c.Ctx.GenerateKeyPair(sh, m, public, append(slices.Clone(private), pkcs11.NewAttribute(pkcs11.CKA_DECRYPT, true)))
}

// TestProfileTokenFixedUsage: a token that fixes usages itself and answers
// a differing template with CKR_GENERAL_ERROR is not marked down. Under
// ProfileAuto the key is made with the token-fixed-usage template (once
// retried, then directly) and its decrypt usage reported; under
// ProfileStrict the refusal is ErrUnsupportedAlgorithm; under
// ProfileTokenFixedUsage the first template is the right one.
func TestProfileTokenFixedUsage(t *testing.T) {
	simulatedOnSoftHSM2(t)
	ctx := context.Background()
	tests := []struct {
		profile string
		calls   []int32 // C_GenerateKeyPair calls for a first and a second key; 0 = refused
	}{
		{ProfileAuto, []int32{2, 1}},
		{ProfileTokenFixedUsage, []int32{1, 1}},
		{ProfileStrict, []int32{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			c := &fixedUsage{}
			cfg, logs := loggedConfig(mainTok)
			cfg.Profile = tt.profile
			cfg.Wrap = func(real Ctx) Ctx { c.Ctx = real; return c }
			tok := openTest(t, cfg, options{})
			for i, want := range tt.calls {
				n := c.generations.Load()
				info, err := tok.GenerateRSA(ctx, "fixed-usage-"+tt.profile+"-"+string(rune('a'+i)), 2048)
				if want == 0 {
					if !errors.Is(err, ErrUnsupportedAlgorithm) || ReturnCode(err) != "CKR_GENERAL_ERROR" {
						t.Fatalf("strict template on a token that fixes usages: %v", err)
					}
					if !tok.Available() || tok.Status().Outages != 0 {
						t.Fatal("a refused template marked the token down")
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = tok.DestroyKey(ctx, info.ID) })
				if got := c.generations.Load() - n; got != want {
					t.Errorf("key %d: %d C_GenerateKeyPair calls, want %d", i, got, want)
				}
				if !slices.Contains(info.Defects, "can decrypt (CKA_DECRYPT)") {
					t.Errorf("defects %q: the decrypt usage the token added is not reported", info.Defects)
				}
				signAndVerify(t, tok, info.ID, info.Public)
			}
			if tt.profile == ProfileAuto && logs.count("token-fixed-usage") != 1 {
				t.Errorf("the switch to token-fixed-usage is not logged once:\n%s", logs.String())
			}
		})
	}
}

func TestOpenRefusesUnknownProfile(t *testing.T) {
	cfg := config(mainTok)
	cfg.Profile = "lenient"
	if tok, err := Open(cfg); err == nil {
		tok.Close()
		t.Fatal("opened with an unknown profile")
	} else if !strings.Contains(err.Error(), `"lenient"`) {
		t.Errorf("error %v does not name the profile", err)
	}
}

// longSaltRefused is SoftHSM2 refusing RSASSA-PSS with a salt longer than
// the hash at C_SignInit, as tpm2-pkcs11 1.9 refuses the longest salt.
type longSaltRefused struct {
	Ctx
	signInits, signs atomic.Int32
}

func (c *longSaltRefused) SignInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	c.signInits.Add(1)
	if m[0].Mechanism == pkcs11.CKM_RSA_PKCS_PSS && keyobj.AttrUint(m[0].Parameter[len(m[0].Parameter)-8:]) > 64 {
		return pkcs11.Error(pkcs11.CKR_MECHANISM_PARAM_INVALID)
	}
	return c.Ctx.SignInit(sh, m, o)
}

func (c *longSaltRefused) Sign(sh pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	c.signs.Add(1)
	return c.Ctx.Sign(sh, msg)
}

// TestCheckSignPSSSalt: CheckSign finds out, with C_SignInit alone, which
// PSS salts the token takes on a key of this size, and remembers it: a
// refused salt is ErrUnsupportedAlgorithm without a signature made, the
// next check refuses without asking the token, and signing with it is a
// NotSigned ErrUnsupportedAlgorithm that leaves the token available.
func TestCheckSignPSSSalt(t *testing.T) {
	simulatedOnSoftHSM2(t)
	ctx := context.Background()
	c := &longSaltRefused{}
	cfg := config(mainTok)
	cfg.Wrap = func(real Ctx) Ctx { c.Ctx = real; return c }
	tok := openTest(t, cfg, options{})
	key := sharedKey
	pub := key.Public.(*rsa.PublicKey)
	short := &rsa.PSSOptions{Hash: crypto.SHA256, SaltLength: rsa.PSSSaltLengthEqualsHash}
	long := &rsa.PSSOptions{Hash: crypto.SHA256, SaltLength: MaxPSSSaltLength(pub, crypto.SHA256)}

	for i := range 2 {
		inits := c.signInits.Load()
		if err := tok.CheckSign(ctx, key.ID, short); err != nil {
			t.Fatalf("hash-length salt: %v", err)
		}
		err := tok.CheckSign(ctx, key.ID, long)
		if !errors.Is(err, ErrUnsupportedAlgorithm) || ReturnCode(err) != "CKR_MECHANISM_PARAM_INVALID" || !strings.Contains(err.Error(), "222-byte salt") {
			t.Fatalf("longest salt: %v", err)
		}
		if got, want := c.signInits.Load()-inits, int32(2-2*i); got != want {
			t.Errorf("check %d: %d C_SignInit calls, want %d (the answers are remembered)", i, got, want)
		}
	}
	if c.signs.Load() != 0 {
		t.Errorf("CheckSign made %d signatures", c.signs.Load())
	}
	_, err := tok.SignDigestOpts(ctx, key.ID, long, digestOf(crypto.SHA256, nil))
	if !errors.Is(err, ErrUnsupportedAlgorithm) || !NotSigned(err) || !tok.Available() {
		t.Fatalf("sign with the longest salt: %v (available %v)", err, tok.Available())
	}
	sig, err := tok.SignDigestOpts(ctx, key.ID, short, digestOf(crypto.SHA256, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPSS(pub, crypto.SHA256, digestOf(crypto.SHA256, nil), sig, short); err != nil {
		t.Fatal(err)
	}
}

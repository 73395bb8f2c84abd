package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/httpserver"
	"github.com/signd/signd/hsm"
)

// TestHSMInfo: `signd hsm info` reports the token's capabilities and its
// keys' freeze, from the token itself when no daemon runs and through the
// admin socket when one does; /readyz names the token and its mechanisms,
// not its module path, serial or firmware.
func TestHSMInfo(t *testing.T) {
	e := newEnv(t, "")
	check := func(where string) {
		t.Helper()
		var v admin.HSMInfoView
		if err := json.Unmarshal([]byte(e.must("", "hsm", "info", "--json")), &v); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		c := v.Capabilities
		if c == nil || c.Label != token.Label || c.CryptokiVersion == "" || c.Profile == "" || !c.Mechanism("CKM_RSA_PKCS").Present {
			t.Fatalf("%s: capabilities %+v", where, c)
		}
		if v.Keys == nil || v.Unfrozen != 0 {
			t.Errorf("%s: keys %+v, %d not frozen on SoftHSM2", where, v.Keys, v.Unfrozen)
		}
		text := e.must("", "hsm", "info")
		for _, want := range []string{"CKM_RSA_PKCS_KEY_PAIR_GEN:", "profile:", "not frozen by the token"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: text output lacks %q:\n%s", where, want, text)
			}
		}
	}
	check("offline")

	addr, _ := e.daemon()
	check("through the daemon")
	res, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ready httpserver.ReadyBody
	if err := json.NewDecoder(res.Body).Decode(&ready); err != nil || res.StatusCode != 200 {
		t.Fatalf("readyz: %d, %v", res.StatusCode, err)
	}
	if ready.Status != "ready" || ready.HSM == nil || ready.HSM.Manufacturer == "" || !slices.Contains(ready.HSM.Mechanisms, "CKM_RSA_PKCS") {
		t.Fatalf("readyz %+v", ready)
	}

	if _, _, err := e.run("", "hsm", "info", "extra"); err == nil {
		t.Error("hsm info took an argument")
	}
}

// TestPKCS11ProfileConfig: pkcs11.profile takes auto, strict or
// token-fixed-usage; anything else is refused at start naming the key.
func TestPKCS11ProfileConfig(t *testing.T) {
	for _, bad := range []string{"lenient", "AUTO", "strict,auto", `"token-fixed-usage "`} {
		e := newEnv(t, "")
		e.setConfig("  pin_file:", "  profile: "+bad+"\n  pin_file:")
		_, errOut, err := e.run("", "hsm", "info")
		if err == nil || !strings.Contains(err.Error()+errOut, "pkcs11.profile") {
			t.Errorf("profile %s: %v %s", bad, err, errOut)
		}
	}
	e := newEnv(t, "")
	e.setConfig("  pin_file:", "  profile: strict\n  require_immutable_keys: true\n  pin_file:")
	var v admin.HSMInfoView
	if err := json.Unmarshal([]byte(e.must("", "hsm", "info", "--json")), &v); err != nil || v.Capabilities.Profile != "strict" {
		t.Fatalf("profile strict: %+v, %v", v.Capabilities, err)
	}
}

// captureCtx keeps the module a Token wraps, to act on the token as
// another program would.
type captureCtx struct{ hsm.Ctx }

// TestServeWarnsUnfrozenKey: a key the token does not freeze (here one
// made by another program without CKA_MODIFIABLE false, so its label can
// be rewritten) is named in a warning at every start and counted by
// `signd hsm info`.
func TestServeWarnsUnfrozenKey(t *testing.T) {
	e := newEnv(t, "")
	var raw captureCtx
	tok, err := hsm.Open(hsm.Config{Module: token.Module, TokenLabel: token.Label, PIN: token.PIN,
		Wrap: func(c hsm.Ctx) hsm.Ctx { raw.Ctx = c; return c }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tok.Close() })
	const label = "made-elsewhere-unfrozen"
	id := []byte("unfrozen-key-id-0001")
	s, err := raw.OpenSession(tokenSlot(t, raw, token.Label), pkcs11.CKF_SERIAL_SESSION|pkcs11.CKF_RW_SESSION)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.CloseSession(s)
	common := func(class uint) []*pkcs11.Attribute {
		return []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_CLASS, class), pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_RSA),
			pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true), pkcs11.NewAttribute(pkcs11.CKA_ID, id), pkcs11.NewAttribute(pkcs11.CKA_LABEL, label),
		}
	}
	_, _, err = raw.GenerateKeyPair(s, []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN, nil)},
		append(common(pkcs11.CKO_PUBLIC_KEY), pkcs11.NewAttribute(pkcs11.CKA_MODULUS_BITS, 2048), pkcs11.NewAttribute(pkcs11.CKA_PUBLIC_EXPONENT, []byte{1, 0, 1})),
		append(common(pkcs11.CKO_PRIVATE_KEY), pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, true), pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, true), pkcs11.NewAttribute(pkcs11.CKA_SIGN, true)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tok.DestroyKey(context.Background(), id); err != nil {
			t.Errorf("destroy the unfrozen key: %v", err)
		}
	})

	var v admin.HSMInfoView
	if err := json.Unmarshal([]byte(e.must("", "hsm", "info", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Unfrozen != 1 {
		t.Errorf("hsm info: %d keys not frozen, want 1: %+v", v.Unfrozen, v.Keys)
	}
	_, logs := e.daemon()
	waitLog(t, logs, "the token does not freeze this key")
	for _, want := range []string{`"label":"` + label + `"`, `"token":"` + token.Label + `"`, "CKA_LABEL can be changed"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the start warning lacks %q:\n%s", want, logs.String())
		}
	}
}

// tokenSlot finds the slot of the token labelled label.
func tokenSlot(t *testing.T, c hsm.Ctx, label string) uint {
	t.Helper()
	slots, err := c.GetSlotList(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if ti, err := c.GetTokenInfo(s); err == nil && ti.Label == label {
			return s
		}
	}
	t.Fatalf("no token %q", label)
	return 0
}

// waitLog waits until logs holds s.
func waitLog(t *testing.T, logs *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q logged:\n%s", s, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

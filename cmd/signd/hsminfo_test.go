package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/signd/signd/cmd/signd/admin"
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
	var ready readyBody
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

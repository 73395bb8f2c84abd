package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// TestStoreOnAFullFilesystem serves signHash through the real router,
// SoftHSM and bbolt while the filesystem under the store fills up: writes
// answer 503 with Retry-After in the CSC error format and consume nothing,
// reads keep working, /readyz says the store is not writable, a backup can
// still be taken elsewhere; once space is back the daemon heals without a
// restart, the SAD refused during the outage signs, and every signature
// received has exactly one audit entry.
func TestStoreOnAFullFilesystem(t *testing.T) {
	fs := storetest.MountTmpfs(t, 4<<20)
	e := newEnv(t, "")
	e.withStorePath(filepath.Join(fs, "signd.db"))
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	alice := enroll(t, e, "alice")
	bearer := e.mint(store.TokenAccess, "alice", "rp", "")
	sads := e.mintSADs("alice", "rp", alice.cred, 600)

	addr, stop := e.startDaemon()
	base := "http://" + addr
	client := &http.Client{Timeout: 30 * time.Second}
	received := map[string]bool{} // digests with a signature in hand
	sign := func(f sadFixture) (*http.Response, map[string]any) {
		t.Helper()
		res, m, err := signHash(client, base, bearer, alice.cred, f)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == http.StatusOK {
			verifySig(t, alice, f, m)
			received[hex.EncodeToString(f.digest)] = true
		}
		return res, m
	}
	if res, m := sign(sads[0]); res.StatusCode != 200 {
		t.Fatalf("signHash before the disk filled: %d %v", res.StatusCode, m)
	}

	free := storetest.Fill(t, fs)
	// The file's own free pages still take some writes; sign until one
	// needs the disk.
	failed := -1
	for i := 1; i < len(sads)-10 && failed < 0; i++ {
		res, m := sign(sads[i])
		switch res.StatusCode {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			failed = i
			if got := res.Header.Get("Retry-After"); got != oauth.RetryAfter {
				t.Errorf("Retry-After %q, want %q", got, oauth.RetryAfter)
			}
			if m["error"] != "temporarily_unavailable" || m["error_description"] != "The signing service is temporarily unavailable, try again later" {
				t.Errorf("503 body %v", m)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("503 Content-Type %q", ct)
			}
		default:
			t.Fatalf("signHash %d on a full filesystem: %d %v", i, res.StatusCode, m)
		}
	}
	if failed < 0 {
		t.Fatalf("%d signatures on a full filesystem, none refused", len(sads)-10)
	}
	t.Logf("signHash %d was the first to find the disk full", failed)
	// Still full: the next request fails the same way.
	if res, m := sign(sads[failed+1]); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second signHash on a full filesystem: %d %v", res.StatusCode, m)
	}

	getJSON := func(path string) (*http.Response, map[string]any) {
		t.Helper()
		res, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res, m
	}
	res, ready := getJSON("/readyz")
	if res.StatusCode != http.StatusServiceUnavailable || ready["component"] != "store" || ready["reason"] != "store not writable" ||
		res.Header.Get("Retry-After") == "" {
		t.Errorf("/readyz on a full filesystem: %d %v", res.StatusCode, ready)
	}
	// Reads need no write: they keep serving.
	if status, list := postJSON(t, base+"/csc/v1/credentials/list", bearer, `{}`); status != 200 || len(list["credentialIDs"].([]any)) != 1 {
		t.Errorf("credentials/list on a full filesystem: %d %v", status, list)
	}
	if status, info := postJSON(t, base+"/csc/v1/credentials/info", bearer, `{"credentialID":"`+alice.cred+`"}`); status != 200 {
		t.Errorf("credentials/info on a full filesystem: %d %v", status, info)
	}
	if res, _ := getJSON("/.well-known/openid-configuration"); res.StatusCode != 200 {
		t.Errorf("OIDC discovery on a full filesystem: %d", res.StatusCode)
	}
	// An admin write through the socket says what is wrong (small ones may
	// still fit in the file's free pages: add users until one does not).
	var addErr error
	for i := 0; i < 200 && addErr == nil; i++ {
		_, _, addErr = e.run("a long password\n", "user", "add", fmt.Sprintf("bob%d", i), "--password-file", "-")
	}
	if addErr == nil || !strings.Contains(addErr.Error(), "the store cannot write now") {
		t.Errorf("user add on a full filesystem: %v", addErr)
	}
	// The operator can still take a backup, to another disk.
	if out := e.must("", "store", "backup", filepath.Join(e.dir, "during-outage.db")); !strings.HasPrefix(out, "backup written") {
		t.Errorf("backup during the outage: %q", out)
	}

	// Space comes back: ready again within a few probe intervals, no restart.
	free()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, ready = getJSON("/readyz")
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %v 10s after space came back", res.StatusCode, ready)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The SAD refused during the outage was not consumed: it signs now.
	if res, m := sign(sads[failed]); res.StatusCode != 200 {
		t.Fatalf("the SAD refused during the outage: %d %v", res.StatusCode, m)
	}
	if res, m := sign(sads[failed+2]); res.StatusCode != 200 {
		t.Fatalf("signHash after the outage: %d %v", res.StatusCode, m)
	}
	stop()

	// Nothing signed without its audit entry, nothing granted twice.
	granted := e.grantedDigests()
	for d := range received {
		if granted[d] != 1 {
			t.Errorf("digest %s: signature received, %d granted audit entries", d, granted[d])
		}
	}
	if len(granted) != len(received) {
		t.Errorf("%d digests granted in the audit log, %d signatures received", len(granted), len(received))
	}
	if out := e.must("", "store", "check"); !strings.HasPrefix(out, "store intact") {
		t.Errorf("store check after the outage: %q", out)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

// enrolled is a user with a client and an enabled credential, made through
// the CLI as an operator would.
type enrolled struct {
	cred string
	leaf *x509.Certificate
}

func enroll(t *testing.T, e *env, user string) enrolled {
	t.Helper()
	e.must("a long password\n", "user", "add", user, "--password-file", "-")
	cred := enrollKey(t, e, user, "CN="+user+",O=Example")
	db := e.openStore()
	defer db.Close()
	return enrolledOf(t, db, cred)
}

// enrolledOf reads credential cred's leaf certificate from db.
func enrolledOf(t *testing.T, db store.Store, cred string) enrolled {
	t.Helper()
	var c *store.Credential
	if err := db.View(context.Background(), func(tx store.Tx) (err error) { c, err = tx.Credential(cred); return err }); err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Chain[0])
	if err != nil {
		t.Fatal(err)
	}
	return enrolled{cred: cred, leaf: leaf}
}

func (e *env) openStore() *bolt.DB {
	e.t.Helper()
	db, err := bolt.Open(e.store, bolt.Options{Timeout: time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	return db
}

// mint stores an access token or SAD directly in the store (the daemon must
// not run): the fixture that stands in for the token endpoint.
func (e *env) mint(kind store.TokenKind, user, client, cred string, digests ...[]byte) string {
	e.t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	tok := &store.Token{Hash: store.Fingerprint(v), Kind: kind, ClientID: client, Username: user, ExpiresAt: time.Now().Add(time.Hour)}
	if kind == store.TokenSAD {
		tok.Scopes, tok.CredentialID, tok.Hashes = []string{"credential"}, cred, digests
	} else {
		tok.Scopes = []string{"service"}
	}
	db := e.openStore()
	defer db.Close()
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.CreateToken(tok) }); err != nil {
		e.t.Fatal(err)
	}
	return v
}

// startDaemon runs `signd serve` until stop is called (or the test ends);
// stop fails the test unless serve returns nil within 20 s.
func (e *env) startDaemon() (addr string, stop func()) {
	e.t.Helper()
	return e.startDaemonWith(nil)
}

// startDaemonWith is startDaemon with configure (nil for none) applied to
// the app before it runs: log capture, fault injection.
func (e *env) startDaemonWith(configure func(*app)) (addr string, stop func()) {
	e.t.Helper()
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &syncBuffer{})
	a.argon2 = &testArgon2
	a.certStatusLoopback = true // the certstatustest CAs serve on 127.0.0.1
	if configure != nil {
		configure(a)
	}
	ready := make(chan string, 1)
	a.ready = func(addr, _ string) { ready <- addr }
	a.metricsReady = func(addr string) { e.metricsAddr = addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd := a.root()
	cmd.SetArgs([]string{"--config", e.cfgPath, "serve"})
	go func() { done <- cmd.ExecuteContext(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				e.t.Errorf("serve returned %v", err)
			}
		case <-time.After(20 * time.Second):
			e.t.Error("serve did not stop")
		}
	}
	e.t.Cleanup(stop)
	select {
	case addr = <-ready:
		return addr, stop
	case err := <-done:
		stopped = true
		log := ""
		if b, ok := a.stderr.(fmt.Stringer); ok {
			log = b.String()
		}
		e.t.Fatalf("serve failed: %v\nlog:\n%s", err, log)
	case <-time.After(30 * time.Second):
		e.t.Fatal("serve did not become ready")
	}
	return "", stop
}

func postJSON(t *testing.T, url, bearer, body string) (int, map[string]any) {
	t.Helper()
	status, m, err := postJSONErr(url, bearer, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, m
}

// postJSONErr is postJSON for a goroutine of a test: it returns its
// failure instead of ending the test.
func postJSONErr(url, bearer, body string) (int, map[string]any, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	data, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(data, &m); err != nil {
		return 0, nil, fmt.Errorf("POST %s: %d %q is not JSON", url, res.StatusCode, data)
	}
	return res.StatusCode, m, nil
}

// TestCSCDaemonAuditAndMetrics runs the CSC API in the real daemon with an
// enrolled key, then checks the audit log through the admin socket and
// from the file, and that flipping one byte of one stored entry makes
// `signd audit verify` fail at that entry.
func TestCSCDaemonAuditAndMetrics(t *testing.T) {
	e := newEnv(t, "csc:\n  name: signd CLI test\n")
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	alice := enroll(t, e, "alice")
	e.must("", "credential", "disable", alice.cred)
	e.must("", "credential", "enable", alice.cred)
	d := sha256.Sum256([]byte("the document"))
	bearer := e.mint(store.TokenAccess, "alice", "rp", "")
	sad := e.mint(store.TokenSAD, "alice", "rp", alice.cred, d[:])

	addr, stop := e.startDaemon()
	base := "http://" + addr + "/csc/v1/"

	status, info := postJSON(t, base+"info", "", "{}")
	if status != 200 || info["name"] != "signd CLI test" || info["oauth2"] != "http://127.0.0.1:8443" {
		t.Errorf("info: %d %v", status, info)
	}
	status, list := postJSON(t, base+"credentials/list", bearer, `{"maxResults":10}`)
	if ids, _ := list["credentialIDs"].([]any); status != 200 || len(ids) != 1 || ids[0] != alice.cred {
		t.Errorf("list: %d %v", status, list)
	}
	status, ci := postJSON(t, base+"credentials/info", bearer, `{"credentialID":"`+alice.cred+`","certificates":"chain","certInfo":true}`)
	if status != 200 || ci["cert"].(map[string]any)["subjectDN"] != alice.leaf.Subject.String() {
		t.Errorf("credentials/info: %d %v", status, ci)
	}
	sign := `{"credentialID":"` + alice.cred + `","SAD":"` + sad + `","hash":["` + base64.StdEncoding.EncodeToString(d[:]) +
		`"],"signAlgo":"1.2.840.113549.1.1.1","hashAlgo":"2.16.840.1.101.3.4.2.1"}`
	status, res := postJSON(t, base+"signatures/signHash", bearer, sign)
	if status != 200 {
		t.Fatalf("signHash: %d %v", status, res)
	}
	sig, _ := base64.StdEncoding.DecodeString(res["signatures"].([]any)[0].(string))
	if err := rsa.VerifyPKCS1v15(alice.leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, d[:], sig); err != nil {
		t.Errorf("signature: %v", err)
	}
	status, res = postJSON(t, base+"signatures/signHash", bearer, sign)
	if status != 400 || res["error_description"] != "Invalid parameter SAD" {
		t.Errorf("second use of the SAD: %d %v", status, res)
	}
	if status, _ := postJSON(t, base+"nope", "", "{}"); status != 404 {
		t.Errorf("unknown CSC method: %d", status)
	}

	// Metrics, on their own listener.
	mres, err := http.Get("http://" + e.metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(mres.Body)
	mres.Body.Close()
	for _, want := range []string{
		`signd_http_requests_total{method="POST",route="/csc/v1/signatures/signHash",status="200"} 1`,
		`signd_http_requests_total{method="POST",route="/csc/v1/signatures/signHash",status="400"} 1`,
		`signd_http_requests_total{method="POST",route="/csc/v1/*",status="404"} 1`,
		`signd_csc_sad_total{outcome="consumed",reason=""} 1`,
		`signd_csc_sad_total{outcome="refused",reason="unknown"} 1`,
		`signd_csc_signhash_duration_seconds_count{outcome="signed"} 1`,
		`signd_hsm_sign_duration_seconds_count{result="ok"}`,
		`signd_hsm_pool_wait_seconds_count`,
		`go_goroutines`, `process_resident_memory_bytes`,
	} {
		if !strings.Contains(string(metricsText), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The audit log through the running daemon. The administration
	// before (client, user, credential acts, each with its entry) is
	// counted; the verification's admin_read entry follows, then the full
	// export's, which ends it.
	out := e.must("", "audit", "verify")
	var verified int
	if _, err := fmt.Sscanf(out, "audit log intact: %d entries, head digest ", &verified); err != nil {
		t.Errorf("audit verify (daemon) = %q", out)
	}
	full := strings.Split(strings.TrimSpace(e.must("", "audit", "export")), "\n")
	if last := full[len(full)-1]; len(full) != verified+2 || !strings.Contains(last, fmt.Sprintf(`{"seq":%d,`, verified+2)) ||
		!strings.Contains(last, `"kind":"admin_read"`) || !strings.Contains(last, `"fields":{"op":"AuditExport"}`) {
		t.Errorf("%d entries verified; full export of %d ends with %s", verified, len(full), last)
	}
	protocol := []string{"audit", "export", "--kind", "credential_enrolled", "--kind", "credential_disabled", "--kind", "credential_enabled", "--kind", "signHash"}
	export := e.must("", protocol...)
	lines := strings.Split(strings.TrimSpace(export), "\n")
	kinds := []string{}
	for _, l := range lines {
		var ent map[string]any
		if err := json.Unmarshal([]byte(l), &ent); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		kinds = append(kinds, ent["kind"].(string)+"/"+ent["outcome"].(string))
	}
	want := "credential_enrolled/pending credential_enrolled/enabled credential_disabled/ok credential_enabled/ok signHash/granted signHash/refused"
	if strings.Join(kinds, " ") != want {
		t.Errorf("exported entries %v, want %s", kinds, want)
	}
	// The grant records the algorithm the request named.
	if granted := lines[len(lines)-2]; !strings.Contains(granted, `"sign_algo":"1.2.840.113549.1.1.1","hash_algo":"2.16.840.1.101.3.4.2.1","outcome":"granted"`) {
		t.Errorf("granted entry %s", granted)
	}
	// The refusal has the count and digest of its hash array, not the hashes.
	if refused := lines[len(lines)-1]; !strings.Contains(refused, `"hashes":[],"hash_count":1,"hashes_sha256":"`) {
		t.Errorf("refused entry %s", refused)
	}
	if strings.Contains(export, sad) || strings.Contains(export, bearer) {
		t.Error("the export contains a SAD or a token")
	}
	stop()

	// From the file (the daemon's reads since are in it too), and since a
	// time after everything: nothing.
	var fileVerified int
	if got := e.must("", "audit", "verify"); !strings.HasPrefix(got, "audit log intact: ") {
		t.Errorf("audit verify (file) = %q, daemon said %q", got, out)
	} else if fmt.Sscanf(got, "audit log intact: %d entries", &fileVerified); fileVerified <= verified {
		t.Errorf("audit verify (file) = %q, daemon said %q", got, out)
	}
	if got := e.must("", "audit", "export", "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); got != "" {
		t.Errorf("export --since the future = %q", got)
	}
	if got := e.must("", append(protocol, "--since", "2000-01-01")...); got != export {
		t.Errorf("export --since 2000-01-01 differs from the export without it")
	}

	// Tamper with the granted signature's entry: the alice becomes alicf.
	var grant struct{ Seq uint64 }
	if err := json.Unmarshal([]byte(lines[len(lines)-2]), &grant); err != nil || grant.Seq == 0 {
		t.Fatalf("granted entry %s: %v", lines[len(lines)-2], err)
	}
	raw, err := bbolt.Open(filepath.Join(e.dir, "signd.db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte("audit"))
		k := binary.BigEndian.AppendUint64(nil, grant.Seq)
		v := bytes.Clone(b.Get(k))
		i := bytes.Index(v, []byte(`"user":"alice"`)) + len(`"user":"alic`)
		v[i] ^= 0x03 // 'e' → 'f'
		return b.Put(k, v)
	})
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.run("", "audit", "verify")
	if want := fmt.Sprintf("audit log broken at entry %d: digest does not match its content", grant.Seq); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("audit verify after tampering: %v", err)
	}
	if _, _, err := e.run("", "audit", "export"); err != nil {
		t.Errorf("export of a decodable but tampered log: %v", err)
	}
}

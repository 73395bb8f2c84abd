package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// step is one CLI invocation of a scripted admin session. args may use
// {cred} (the credential created earlier) and {chain} (a chain file
// issued for it); stdin is fed to the command.
type step struct {
	args  []string
	stdin string
	fails bool // the command must fail
}

var (
	idRE      = regexp.MustCompile(`\b[a-z2-7]{26}\b`)
	hexRE     = regexp.MustCompile(`\b[0-9a-f]{32,34}\b`)
	timeRE    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	secretRE  = regexp.MustCompile(`(client_secret:\s+|"generated_secret": ")[A-Za-z0-9_-]{43}`)
	pemRE     = regexp.MustCompile(`(?s)-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----\n?`)
	csrJSONRE = regexp.MustCompile(`"csr_pem": "[^"]*"`)
	serialRE  = regexp.MustCompile(`("serial": "|serial:\s+)[0-9a-f]+`)
)

// normalize masks what differs between two runs by nature: random IDs,
// key IDs, serials, timestamps, generated secrets and PEM blobs.
func normalize(s string) string {
	s = pemRE.ReplaceAllString(s, "<PEM>")
	s = csrJSONRE.ReplaceAllString(s, `"csr_pem": "<PEM>"`)
	s = secretRE.ReplaceAllString(s, "${1}<SECRET>")
	s = timeRE.ReplaceAllString(s, "<TIME>")
	s = serialRE.ReplaceAllString(s, "${1}<SERIAL>")
	s = idRE.ReplaceAllString(s, "<ID>")
	s = hexRE.ReplaceAllString(s, "<HEX>")
	return s
}

// session runs the scripted admin session against e and returns its
// normalized transcript.
func session(t *testing.T, e *env, ca *testCA) []string {
	t.Helper()
	pinFile := filepath.Join(e.dir, "user.pin")
	secretFile := filepath.Join(e.dir, "client.secret")
	os.WriteFile(pinFile, []byte("123456\n"), 0o600)
	os.WriteFile(secretFile, []byte(strings.Repeat("s3cr3t-", 6)+"\n"), 0o600)
	claims := filepath.Join(e.dir, "claims.json")
	os.WriteFile(claims, []byte(`{"given_name":"Alice","last_name":"Jansen","birthdate":"1990-02-03"}`), 0o600)
	badClaims := filepath.Join(e.dir, "bad-claims.json")
	os.WriteFile(badClaims, []byte(`{"given_name":"Alice","shoe_size":"42"}`), 0o600)

	steps := []step{
		{args: []string{"user", "add", "alice", "--password-file", "-", "--pin-file", pinFile, "--email", "alice@example.test", "--email-verified", "--claims", claims}, stdin: "correct horse battery\n"},
		{args: []string{"user", "add", "alice", "--password-file", "-"}, stdin: "another password\n", fails: true},
		{args: []string{"user", "add", "bob", "--password-file", "-"}, stdin: "short\n", fails: true},
		{args: []string{"user", "add", "bob", "--password-file", "-", "--claims", badClaims}, stdin: "bob's password\n", fails: true},
		{args: []string{"user", "add", "../etc", "--password-file", "-"}, stdin: "a fine password\n", fails: true},
		{args: []string{"user", "add", "bob", "--password-file", "-", "--json"}, stdin: "bob's password\n"},
		{args: []string{"user", "show", "alice"}},
		{args: []string{"user", "list"}},
		{args: []string{"user", "disable", "alice"}},
		{args: []string{"user", "enable", "alice"}},
		{args: []string{"user", "unlock", "alice", "--json"}},
		{args: []string{"user", "unlock-pin", "alice"}},
		{args: []string{"user", "unlock-pin", "nobody"}, fails: true},
		{args: []string{"user", "set-password", "alice", "--password-file", "-"}, stdin: "a new password\n"},
		{args: []string{"user", "set-pin", "alice", "--pin-file", "-"}, stdin: "654321\n"},
		{args: []string{"user", "show", "nobody"}, fails: true},
		{args: []string{"client", "add", "app", "--redirect-uri", "https://app.example/cb", "--name", "App"}},
		{args: []string{"client", "add", "app2", "--redirect-uri", "https://app2.example/cb", "--redirect-uri", "https://app2.example/cb2", "--secret-file", secretFile, "--scope", "openid", "--scope", "email", "--require-pkce", "--json"}},
		{args: []string{"client", "add", "app", "--redirect-uri", "https://app.example/cb"}, fails: true},
		{args: []string{"client", "add", "app3", "--redirect-uri", "not a uri"}, fails: true},
		{args: []string{"client", "add", "app3", "--redirect-uri", "https://a.example/cb", "--scope", "admin"}, fails: true},
		{args: []string{"client", "list"}},
		{args: []string{"client", "show", "app2"}},
		{args: []string{"client", "remove", "app2"}},
		{args: []string{"client", "show", "app2"}, fails: true},
		{args: []string{"client", "remove", "app2"}, fails: true},
		{args: []string{"credential", "create", "--user", "nobody"}, fails: true},
		{args: []string{"credential", "create", "--user", "alice", "--algo", "rsa-1024"}, fails: true},
		{args: []string{"credential", "create", "--user", "alice", "--subject", "CN=Alice,XX=bad"}, fails: true},
		{args: []string{"credential", "create", "--user", "alice", "--subject", "CN=Alice Jansen,O=Example,C=NL", "--csr-out", "-"}},
		{args: []string{"credential", "show", "{cred}"}},
		{args: []string{"credential", "enable", "{cred}"}, fails: true}, // no certificate yet
		{args: []string{"credential", "import-cert", "{cred}", "--chain", "{chain}"}},
		{args: []string{"credential", "list", "--user", "alice"}},
		{args: []string{"credential", "list", "--user", "bob", "--json"}},
		{args: []string{"credential", "disable", "{cred}"}},
		{args: []string{"credential", "enable", "{cred}", "--json"}},
		{args: []string{"credential", "show", "nope"}, fails: true},
		{args: []string{"user", "remove", "alice"}, fails: true}, // owns {cred}
		{args: []string{"credential", "remove", "{cred}"}},
		{args: []string{"credential", "show", "{cred}"}, fails: true},
		{args: []string{"credential", "remove", "{cred}", "--json"}, fails: true},
		{args: []string{"user", "remove", "alice", "--json"}},
		{args: []string{"user", "show", "alice"}, fails: true},
		{args: []string{"user", "remove", "nobody"}, fails: true},
		{args: []string{"user", "remove", "bob"}},
	}
	var transcript []string
	var cred string
	for _, s := range steps {
		args := make([]string, len(s.args))
		for i, a := range s.args {
			a = strings.ReplaceAll(a, "{cred}", cred)
			if a == "{chain}" {
				a = filepath.Join(e.dir, "chain.pem")
			}
			args[i] = a
		}
		out, errOut, err := e.run(s.stdin, args...)
		if (err != nil) != s.fails {
			t.Fatalf("signd %s: err = %v, want failure %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, s.fails, out, errOut)
		}
		if cred == "" && strings.Contains(strings.Join(args, " "), "--csr-out -") {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			cred = lines[len(lines)-1]
			if !idRE.MatchString(cred) {
				t.Fatalf("last line of credential create is %q, want an ID", cred)
			}
			chain := ca.issue(t, out)
			if err := os.WriteFile(filepath.Join(e.dir, "chain.pem"), []byte(chain), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		entry := "$ signd " + strings.Join(s.args, " ") + "\n" + out
		if err != nil {
			entry += "error: " + err.Error() + "\n"
		}
		transcript = append(transcript, normalize(strings.ReplaceAll(entry, e.dir, "<DIR>")))
	}
	return transcript
}

func TestAdminCLISameWithDaemonRunningAndStopped(t *testing.T) {
	ca := newTestCA(t, "CLI test CA")

	local := newEnv(t, "")
	stopped := session(t, local, ca)

	remote := newEnv(t, "")
	_, logs := remote.daemon()
	running := session(t, remote, ca)

	if len(stopped) != len(running) {
		t.Fatalf("transcripts differ in length: %d vs %d", len(stopped), len(running))
	}
	for i := range stopped {
		if stopped[i] != running[i] {
			t.Errorf("step %d differs\n--- daemon stopped:\n%s\n--- daemon running:\n%s", i, stopped[i], running[i])
		}
	}
	// The running session really went through the daemon.
	if !strings.Contains(logs.String(), `"op":"CreateCredential"`) {
		t.Errorf("daemon log shows no credential creation:\n%s", logs.String())
	}
	// Spot checks on content, so equal-but-empty transcripts cannot pass.
	all := strings.Join(stopped, "\n")
	for _, want := range []string{
		"username:        alice", "email verified:  yes", "signing PIN:     yes",
		"claim given_name: Alice", `"username": "bob"`,
		"error: user \"alice\": already exists",
		"error: password must be 8 to 1024 bytes long",
		"claims: unknown key \"shoe_size\"",
		"client_secret:     <SECRET>", `"require_pkce": true`,
		"error: client \"app2\": not found",
		"error: user \"nobody\": not found",
		"algorithm \"rsa-1024\" is not supported",
		"attribute type \"XX\" is not supported",
		"<PEM>", "has no certificate yet",
		"status:     enabled", "subject:    CN=Alice Jansen,O=Example,C=NL",
		`"status": "enabled"`,
		"error: credential \"nope\": not found",
		"revoked:         0 access tokens, 0 SADs, 0 authorization codes, 0 pending authorization requests, 0 login sessions",
		"error: user \"alice\" still owns credentials <ID>: remove them first with `signd credential remove ID`",
		"removed credential <ID> of alice\ndestroyed in the HSM: private key, public key, certificate (key id <HEX>, label \"signd-<ID>\")\nrevoked: 0 access tokens",
		`"removed": "alice"`, `"access_tokens": 0`,
		"removed user bob\nrevoked: 0 access tokens",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	// A secret as a value of its own: the PINs' digits inside a longer
	// number (a log line's nanoseconds) are not them.
	for _, secret := range []string{"correct horse battery", "123456", "654321", "s3cr3t-s3cr3t"} {
		own := regexp.MustCompile(`(^|[^0-9])` + regexp.QuoteMeta(secret) + `([^0-9]|$)`)
		if own.MatchString(strings.Join(running, "")) || own.MatchString(logs.String()) {
			t.Errorf("secret %q appears in output or daemon log", secret)
		}
	}
}

func TestImportCertRefusesMismatchedKeyAndBrokenChain(t *testing.T) {
	e := newEnv(t, "")
	e.must("a password!\n", "user", "add", "carol", "--password-file", "-")
	out := e.must("", "credential", "create", "--user", "carol", "--csr-out", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	cred := lines[len(lines)-1]
	ca := newTestCA(t, "Good CA")
	other := newTestCA(t, "Other CA")

	// A certificate for a different key, issued by the good CA.
	foreign, _ := rsa.GenerateKey(rand.Reader, 2048)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "carol"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &foreign.PublicKey, ca.key)
	foreignChain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + ca.pem()

	good := ca.issue(t, out)
	leafOnly := good[:strings.Index(good, "-----END CERTIFICATE-----")+len("-----END CERTIFICATE-----\n")]

	cases := []struct {
		name, chain, want string
	}{
		{"mismatched_key", foreignChain, "public key is not the key of credential"},
		{"chain_with_wrong_root", leafOnly + other.pem(), "chain does not verify"},
		{"leaf_without_root", leafOnly, "not a self-signed root"},
		{"not_pem", "hello", "no PEM certificate found"},
		{"private_key_pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "want CERTIFICATE"},
		{"trailing_garbage", good + "garbage", "trailing data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(e.dir, tc.name+".pem")
			os.WriteFile(f, []byte(tc.chain), 0o600)
			_, _, err := e.run("", "credential", "import-cert", cred, "--chain", f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			// Nothing changed: still pending, no chain.
			var v struct{ Status string }
			json.Unmarshal([]byte(e.must("", "credential", "show", cred, "--json")), &v)
			if v.Status != "pending" {
				t.Fatalf("status after refused import = %q, want pending", v.Status)
			}
		})
	}
	// The right chain is accepted.
	f := filepath.Join(e.dir, "good.pem")
	os.WriteFile(f, []byte(good), 0o600)
	if got := e.must("", "credential", "import-cert", cred, "--chain", f); !strings.Contains(got, "status:     enabled") {
		t.Fatalf("import-cert output:\n%s", got)
	}
}

func TestCLIInputErrors(t *testing.T) {
	e := newEnv(t, "")
	empty := filepath.Join(e.dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	big := filepath.Join(e.dir, "big")
	os.WriteFile(big, []byte(strings.Repeat("x", 5000)), 0o600)
	dupClaims := filepath.Join(e.dir, "dup.json")
	os.WriteFile(dupClaims, []byte(`{"given_name":"A","given_name":"B"}`), 0o600)
	nested := filepath.Join(e.dir, "nested.json")
	os.WriteFile(nested, []byte(`{"given_name":{"x":1}}`), 0o600)
	cases := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"missing_password_file_flag", "", []string{"user", "add", "x"}, `at least one of the flags in the group [password-file enroll] is required`},
		{"password_file_absent", "", []string{"user", "add", "x", "--password-file", "/nonexistent/pw"}, "no such file"},
		{"password_file_empty", "", []string{"user", "add", "x", "--password-file", empty}, "is empty"},
		{"password_file_oversized", "", []string{"user", "add", "x", "--password-file", big}, "larger than 4096 bytes"},
		{"two_stdin_files", "pw\n", []string{"user", "add", "x", "--password-file", "-", "--pin-file", "-"}, "only one of the file flags"},
		{"claims_duplicate_key", "a password\n", []string{"user", "add", "x", "--password-file", "-", "--claims", dupClaims}, `key "given_name" appears twice`},
		{"claims_nested", "a password\n", []string{"user", "add", "x", "--password-file", "-", "--claims", nested}, "must be a string"},
		{"bad_email", "a password\n", []string{"user", "add", "x", "--password-file", "-", "--email", "Bob <bob@x>"}, "not a plain email address"},
		{"extra_arg", "", []string{"user", "show", "a", "b"}, "accepts 1 arg"},
		{"whoami_arg", "", []string{"whoami", "root"}, `unknown command "root" for "signd whoami"`},
		{"unlock_pin_no_user", "", []string{"user", "unlock-pin"}, "accepts 1 arg"},
		{"unlock_pin_unknown_user", "", []string{"user", "unlock-pin", "nobody"}, `user "nobody": not found`},
		{"unknown_command", "", []string{"user", "frobnicate"}, ""},
		{"config_missing", "", []string{"--config", "/nonexistent/signd.yaml", "user", "list"}, "/nonexistent/signd.yaml"},
		{"client_short_secret", "short\n", []string{"client", "add", "c", "--redirect-uri", "https://c.example/cb", "--secret-file", "-"}, "client secret must be 32 to 512"},
		{"client_duplicate_redirect", "", []string{"client", "add", "c", "--redirect-uri", "https://c.example/cb", "--redirect-uri", "https://c.example/cb"}, "given twice"},
		{"credential_missing_user_flag", "", []string{"credential", "create"}, `required flag(s) "user" not set`},
		{"pending_approve_without_id", "", []string{"pending", "approve"}, "accepts 1 arg(s), received 0"},
		{"pending_reject_two_ids", "", []string{"pending", "reject", "a", "b"}, "accepts 1 arg(s), received 2"},
		{"pending_list_extra_arg", "", []string{"pending", "list", "a"}, `unknown command "a" for "signd pending list"`},
		{"pending_approve_unknown", "", []string{"pending", "approve", "nosuchrequest"}, `no pending request "nosuchrequest" (unknown, or already approved, rejected or expired)`},
		{"pending_reject_hostile_id", "", []string{"pending", "reject", "x\n\x1b[31mok"}, `no pending request "x\n\x1b[31mok"`},
		{"pending_approve_oversized_id", "", []string{"pending", "approve", strings.Repeat("z", 5000)}, "no pending request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.run(tc.stdin, tc.args...)
			if err == nil {
				t.Fatal("command succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// Nothing was created by any of them.
	if out := e.must("", "user", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("users after refused commands: %s", out)
	}
}

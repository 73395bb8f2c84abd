package softhsmtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/store/storetest"
)

// procScan is one pass over /proc/*/cmdline: the first process whose
// argv holds a secret, and whether a process with mark in its argv was
// seen (proof that the scan covers the set-up while it runs).
func procScan(mark string, secrets ...string) (leak string, sawMark bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if strings.Trim(e.Name(), "0123456789") != "" {
			continue
		}
		argv, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(argv) == 0 {
			continue
		}
		if bytes.Contains(argv, []byte(mark)) {
			sawMark = true
		}
		for _, s := range secrets {
			if bytes.Contains(argv, []byte(s)) {
				return "pid " + e.Name() + ": " + strings.ReplaceAll(string(argv), "\x00", " "), sawMark
			}
		}
	}
	return "", sawMark
}

// /proc/PID/cmdline is readable by every local user (ps, top): a PIN on a
// command line is a PIN disclosed. init-token.sh, which the demo, the
// benchmarks and CI use to create tokens, runs with sentinel PINs while
// every process's argv is watched; the token it made must then accept
// exactly those PINs.
func TestInitTokenKeepsPINsOffArgv(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	module, err := Module()
	if err != nil {
		t.Fatal(err)
	}
	script, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const label = "argv-sentinel"
	userPIN, soPIN := "usr-sentinel-"+randomPIN(), "so-sentinel-"+randomPIN()

	cmd := exec.Command("bash", script, dir, label)
	cmd.Env = append(os.Environ(), "SOFTHSM_USER_PIN="+userPIN, "SOFTHSM_SO_PIN="+soPIN)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	var (
		leak    string
		sawMark bool
		scans   int
	)
	stop := storetest.Meanwhile(1, func(int) bool {
		l, saw := procScan(dir, userPIN, soPIN)
		scans++
		sawMark = sawMark || saw
		if l != "" && leak == "" {
			leak = l
		}
		return true
	})
	runErr := cmd.Run()
	stop()

	if runErr != nil {
		t.Fatalf("init-token.sh: %v\n%s", runErr, stderr.String())
	}
	if leak != "" {
		t.Fatalf("a PIN is on a command line, readable by every local user: %s", leak)
	}
	if !sawMark {
		t.Fatalf("%d scans of /proc never saw the set-up running: the test proves nothing", scans)
	}
	if strings.Contains(stdout.String()+stderr.String(), "sentinel") {
		t.Errorf("a PIN was printed:\n%s%s", stdout.String(), stderr.String())
	}
	conf, ok := strings.CutPrefix(strings.TrimSpace(stdout.String()), "SOFTHSM2_CONF=")
	if !ok {
		t.Fatalf("output %q", stdout.String())
	}
	t.Setenv("SOFTHSM2_CONF", conf)
	checkPINs(t, module, label, userPIN, soPIN)
}

// checkPINs logs in to the token labelled label as the user and as the
// security officer, and checks that a wrong PIN is refused.
func checkPINs(t *testing.T, module, label, userPIN, soPIN string) {
	t.Helper()
	ctx := pkcs11.New(module)
	if ctx == nil {
		t.Fatalf("cannot load %s", module)
	}
	if err := ctx.Initialize(); err != nil {
		t.Fatalf("C_Initialize: %v", err)
	}
	defer ctx.Finalize()
	slots, err := ctx.GetSlotList(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, slot := range slots {
		info, err := ctx.GetTokenInfo(slot)
		if err != nil || strings.TrimRight(info.Label, " ") != label {
			continue
		}
		s, err := ctx.OpenSession(slot, pkcs11.CKF_SERIAL_SESSION|pkcs11.CKF_RW_SESSION)
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.CloseSession(s)
		for _, l := range []struct {
			who  uint
			pin  string
			want bool
		}{
			{pkcs11.CKU_USER, "wrong-pin", false},
			{pkcs11.CKU_USER, userPIN, true},
			{pkcs11.CKU_SO, soPIN, true},
		} {
			err := ctx.Login(s, l.who, l.pin)
			if (err == nil) != l.want {
				t.Errorf("C_Login(user type %d): %v, want success %v", l.who, err, l.want)
			}
			if err == nil {
				_ = ctx.Logout(s)
			}
		}
		return
	}
	t.Fatalf("no token labelled %q", label)
}

// secretArgRE matches a PIN, password or passphrase option whose value is
// expanded from a shell variable or command: the value would be on that
// command's argv. Options that name a file (--pin-file, --password-file)
// do not match.
var secretArgRE = regexp.MustCompile(`(?:--so-pin|--pin|-pin|--password|--passphrase|-passin|-passout|-pass)(?:=|\s+)["']?(?:pass:|env:)?["']?\$|pass:["']?\$`)

// The behavioural test above watches init-token.sh; this one reads every
// admin and demo script for a secret handed to a command as an argument.
func TestScriptsKeepSecretsOffArgv(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(sourceDir(), "..", "scripts", "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts found (%v)", err)
	}
	scripts = append(scripts, filepath.Join(sourceDir(), "init-token.sh"))
	for _, path := range scripts {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if secretArgRE.MatchString(line) {
				t.Errorf("%s:%d passes a secret on a command line: %s", filepath.Base(path), i+1, strings.TrimSpace(line))
			}
		}
	}
}

func TestSecretArgRE(t *testing.T) {
	for line, want := range map[string]bool{
		`softhsm2-util --init-token --pin "$SOFTHSM_USER_PIN" --so-pin "$SO"`:                   true,
		`pkcs11-tool --login --pin=$PIN`:                                                        true,
		`openssl genpkey -pass pass:$PASS`:                                                      true,
		`openssl pkcs12 -passin "pass:${pw}"`:                                                   true,
		`signd user add demo --password-file "$var/demo-password"`:                              false,
		`signd user add demo --pin-file "$var/demo-pin"`:                                        false,
		`openssl x509 -req -in "$work/csr.pem" -CAkey "$cakey"`:                                 false,
		`conf_line=$(SOFTHSM_USER_PIN=$(cat "$var/pkcs11.pin") softhsm-test/init-token.sh x y)`: false,
	} {
		if got := secretArgRE.MatchString(line); got != want {
			t.Errorf("%q: match %v, want %v", line, got, want)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/store"
)

// sadFixture is a SAD minted for one digest.
type sadFixture struct {
	sad    string
	digest []byte
}

// mintSADs stores n SADs of user and client for cred, each for its own
// random digest, in one transaction (the daemon must not run).
func (e *env) mintSADs(user, client, cred string, n int) []sadFixture {
	e.t.Helper()
	out := make([]sadFixture, n)
	db := e.openStore()
	defer db.Close()
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for i := range out {
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			d := sha256.Sum256(b)
			out[i] = sadFixture{sad: base64.RawURLEncoding.EncodeToString(b), digest: d[:]}
			if err := tx.CreateToken(&store.Token{
				Hash: store.Fingerprint(out[i].sad), Kind: store.TokenSAD, ClientID: client, Username: user,
				Scopes: []string{"credential"}, CredentialID: cred, Hashes: [][]byte{d[:]}, ExpiresAt: time.Now().Add(time.Hour),
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// signHash sends one signHash request; it returns the response (body
// read) and the decoded JSON body.
func signHash(client *http.Client, base, bearer, cred string, f sadFixture) (*http.Response, map[string]any, error) {
	body := fmt.Sprintf(`{"credentialID":%q,"SAD":%q,"hash":[%q],"signAlgo":"1.2.840.113549.1.1.11"}`,
		cred, f.sad, base64.StdEncoding.EncodeToString(f.digest))
	req, _ := http.NewRequest(http.MethodPost, base+"/csc/v1/signatures/signHash", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return res, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return res, nil, fmt.Errorf("signHash answered %d with %q: %w", res.StatusCode, data, err)
	}
	return res, m, nil
}

// verifySig checks a signHash signature against the credential's
// certificate.
func verifySig(t *testing.T, who enrolled, f sadFixture, m map[string]any) {
	t.Helper()
	sigs, _ := m["signatures"].([]any)
	if len(sigs) != 1 {
		t.Fatalf("signatures %v", m)
	}
	sig, _ := base64.StdEncoding.DecodeString(sigs[0].(string))
	if err := rsa.VerifyPKCS1v15(who.leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, f.digest, sig); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
}

// grantedDigests returns, from the store's audit log (which must verify),
// how often each digest was granted to signHash.
func (e *env) grantedDigests() map[string]int {
	e.t.Helper()
	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact") {
		e.t.Fatalf("audit verify: %q", out)
	}
	granted := map[string]int{}
	for _, ent := range logtest.Lines[struct {
		Kind, Outcome string
		Hashes        []string
	}](e.t, e.must("", "audit", "export")) {
		if ent.Kind == string(store.AuditSignHash) && ent.Outcome == store.AuditGranted {
			for _, h := range ent.Hashes {
				granted[h]++
			}
		}
	}
	return granted
}

// runMainEnv makes this test binary run signd's main instead of the tests
// (TestMain): a test that must kill -9 the daemon runs it as a process.
const runMainEnv = "SIGND_TEST_RUN_MAIN"

// child is `signd serve` running as a separate process.
type child struct {
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
	done chan error
}

// startChild starts `signd serve` as a process (with extraEnv, NAME=VALUE,
// added to its environment) and waits until it accepts, returning how long
// that took.
func (e *env) startChild(extraEnv ...string) (*child, time.Duration) {
	e.t.Helper()
	begin := time.Now()
	cmd := exec.Command(os.Args[0], "--config", e.cfgPath, "serve")
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), extraEnv...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	c := &child{cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			c.logs.Write([]byte(line + "\n"))
			var l struct{ Msg, Listen string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "signd ready" {
				ready <- l.Listen
			}
		}
		c.done <- cmd.Wait()
	}()
	select {
	case c.addr = <-ready:
		return c, time.Since(begin)
	case err := <-c.done:
		e.t.Fatalf("signd exited before it was ready: %v\n%s", err, c.logs.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		e.t.Fatalf("signd not ready after 60s:\n%s", c.logs.String())
	}
	return nil, 0
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	if err := <-c.done; err == nil {
		t.Fatal("signd survived SIGKILL")
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (c *child) stop(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("signd after SIGTERM: %v\n%s", err, c.logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("signd did not stop on SIGTERM")
	}
}

// crashRounds is how many times TestCrashLoop kills the daemon: a few in
// the normal suite, more with SIGND_CRASH_ROUNDS (make crashtest).
func crashRounds(t *testing.T) int {
	if s := os.Getenv("SIGND_CRASH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SIGND_CRASH_ROUNDS=%q", s)
		}
		return n
	}
	return 4
}

// TestCrashLoop kills the daemon with SIGKILL, over and over, while
// clients send signHash requests in parallel (each SAD sent twice, and a
// SAD whose answer was lost in a crash sent again after the restart). It
// checks that no SAD ever signs twice, that every signature a client
// received has exactly one "granted" audit entry, that the audit chain
// verifies and the store checks clean after every crash, and that the
// daemon is ready again quickly.
func TestCrashLoop(t *testing.T) {
	rounds := crashRounds(t)
	const perRound, workers = 80, 6
	e := newEnv(t, "")
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	alice := enroll(t, e, "alice")
	bearer := e.mint(store.TokenAccess, "alice", "rp", "")
	sads := e.mintSADs("alice", "rp", alice.cred, rounds*perRound)

	var mu sync.Mutex
	signed := map[string]int{} // digest → signatures received
	var uncertain []sadFixture // answer lost in a crash: sent again next round
	record := func(f sadFixture, res *http.Response, m map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case res.StatusCode == http.StatusOK:
			verifySig(t, alice, f, m)
			signed[hex.EncodeToString(f.digest)]++
		case res.StatusCode == http.StatusBadRequest && m["error_description"] == "Invalid parameter SAD":
		default:
			t.Errorf("signHash: %d %v", res.StatusCode, m)
		}
	}
	var worst time.Duration
	for round := range rounds {
		c, took := e.startChild()
		worst = max(worst, took)
		base := "http://" + c.addr
		work := make(chan sadFixture, perRound+len(uncertain))
		for _, f := range uncertain {
			work <- f
		}
		uncertain = nil
		for _, f := range sads[round*perRound : (round+1)*perRound] {
			work <- f
		}
		close(work)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 20 * time.Second}
				<-start
				for f := range work {
					for range 2 { // the second is a double-spend attempt
						res, m, err := signHash(client, base, bearer, alice.cred, f)
						if err != nil { // the daemon died under us
							mu.Lock()
							uncertain = append(uncertain, f)
							mu.Unlock()
							break
						}
						record(f, res, m)
					}
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(100+mrand.IntN(300)) * time.Millisecond)
		c.kill(t)
		wg.Wait()
		mu.Lock()
		// What the workers never got to is sent next round too.
		for f := range work {
			uncertain = append(uncertain, f)
		}
		mu.Unlock()
		if out := e.must("", "store", "check"); !strings.HasPrefix(out, "store intact") {
			t.Fatalf("round %d: store check after kill -9: %q", round, out)
		}
	}

	// A last start: it serves, and the SADs in doubt are settled.
	c, took := e.startChild()
	worst = max(worst, took)
	client := &http.Client{Timeout: 20 * time.Second}
	for _, f := range uncertain {
		res, m, err := signHash(client, "http://"+c.addr, bearer, alice.cred, f)
		if err != nil {
			t.Fatal(err)
		}
		record(f, res, m)
	}
	c.stop(t)

	granted := e.grantedDigests()
	total := 0
	for d, n := range signed {
		total += n
		if n > 1 {
			t.Errorf("the SAD for %s signed %d times", d, n)
		}
		if granted[d] != 1 {
			t.Errorf("digest %s: a signature was received, %d granted audit entries", d, granted[d])
		}
	}
	for d, n := range granted {
		if n > 1 {
			t.Errorf("digest %s granted %d times", d, n)
		}
	}
	if total == 0 {
		t.Fatal("no signature was made: the load never reached the daemon")
	}
	if out := e.must("", "store", "check"); !strings.HasPrefix(out, "store intact") {
		t.Errorf("store check at the end: %q", out)
	}
	t.Logf("%d crashes, %d signatures received, %d granted entries, slowest start %s", rounds, total, len(granted), worst)
	if worst > 20*time.Second {
		t.Errorf("the daemon took %s to be ready after a crash", worst)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
)

// etcdServer is the embedded etcd of this package's tests: started by the
// first test that needs it, stopped by TestMain (stopEtcd).
var etcdServer lazyServer[*etcdtest.Server]

// sharedEtcd returns the package's embedded etcd server, starting it once.
func sharedEtcd(t *testing.T) *etcdtest.Server {
	t.Helper()
	return etcdServer.get(t, "signd-etcd-", etcdtest.Start)
}

// stopEtcd stops the embedded etcd if a test started it.
func stopEtcd() { etcdServer.stop() }

// lazyServer is a test server the first test that needs it starts in a
// temporary directory, shared by the package's tests until stop.
type lazyServer[S interface{ Close() }] struct {
	once    sync.Once
	srv     S
	started bool
	dir     string
	err     error
}

// get starts the server with start in a new directory named after pattern
// (os.MkdirTemp) the first time, and returns it.
func (l *lazyServer[S]) get(t *testing.T, pattern string, start func(dir string) (S, error)) S {
	t.Helper()
	l.once.Do(func() {
		if l.dir, l.err = os.MkdirTemp("", pattern); l.err != nil {
			return
		}
		l.srv, l.err = start(l.dir)
		l.started = l.err == nil
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.srv
}

// stop closes the server if it was started and removes its directory.
func (l *lazyServer[S]) stop() {
	if l.started {
		l.srv.Close()
	}
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
}

// newEtcdEnv is newEnv on the embedded etcd under prefix (a fresh one when
// empty): store.backend etcd. Nodes of one installation share the prefix.
// extra is appended to the config, as for newEnv.
func newEtcdEnv(t *testing.T, prefix, extra string) *env {
	t.Helper()
	srv := sharedEtcd(t)
	if prefix == "" {
		prefix = srv.Prefix()
	}
	return newEtcdEnvOn(t, srv.Endpoints, prefix, extra)
}

// newEtcdEnvOn is newEnv on the etcd at endpoints under prefix, as a node
// with a name of its own (store.etcd.node: its own audit chain).
func newEtcdEnvOn(t *testing.T, endpoints []string, prefix, extra string) *env {
	t.Helper()
	e := newEnv(t, extra)
	e.setConfig("store:\n", fmt.Sprintf("store:\n  backend: etcd\n  etcd:\n    endpoints: [%s]\n    prefix: %s\n    node: node%d\n",
		strings.Join(endpoints, ", "), prefix, etcdNodes.Add(1)))
	return e
}

// etcdNodes numbers the nodes newEtcdEnvOn makes, so that no two share a
// name.
var etcdNodes atomic.Int64

// codeFlow runs the browser part of an authorization code flow for alice
// at conf's authorization endpoint (logging in unless the browser's login
// session still holds) and returns the code (not redeemed).
func codeFlow(t *testing.T, browser *oauthtest.Browser, conf oauth2.Config, scope, state string, params ...oauth2.AuthCodeOption) string {
	t.Helper()
	return loginFlow(t, browser, conf, mayReuseLogin, scope, state, params...)
}

// How loginFlow meets the login page: mustLogin fails the flow when the
// browser is not asked to log in.
const mustLogin, mayReuseLogin = true, false

// loginFlow is codeFlow, with login mustLogin or mayReuseLogin.
func loginFlow(t *testing.T, browser *oauthtest.Browser, conf oauth2.Config, login bool, scope, state string, params ...oauth2.AuthCodeOption) string {
	t.Helper()
	c := conf
	c.Scopes = []string{scope}
	s, err := browser.Get(c.AuthCodeURL(state, append(params, oauth2.SetAuthURLParam("lang", "en"))...))
	if err != nil {
		t.Fatal(err)
	}
	if login && (s.Form == nil || !s.Form.Has("password")) {
		t.Fatalf("%s: no login page: %d %s", scope, s.Status, oauthtest.Text(s.Body))
	}
	if s.Form != nil && s.Form.Has("password") { // else the login session is reused
		if s, err = browser.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve"); err != nil {
			t.Fatal(err)
		}
	}
	if s.Form == nil {
		t.Fatalf("%s: no consent page: %d %s", scope, s.Status, oauthtest.Text(s.Body))
	}
	set := map[string]string{}
	if scope == "credential" {
		if !s.Form.Has("pin") {
			t.Fatalf("the credential consent page asks no PIN: %s", oauthtest.Text(s.Body))
		}
		set["pin"] = journeyPIN
	}
	if s, err = browser.Submit(s.Form, set, "approve"); err != nil {
		t.Fatal(err)
	}
	q := s.Query()
	if !s.Redirected() || q.Get("code") == "" || q.Get("state") != state {
		t.Fatalf("%s: no code: %d %v %s", scope, s.Status, s.Location, oauthtest.Text(s.Body))
	}
	return q.Get("code")
}

// TestCSCJourneyEtcd: `signd serve` on etcd (store.backend etcd) with the
// real token: enrolment through the CLI, the service and credential flows,
// a signHash whose signature verifies with the certificate, the SAD spent
// once, and `signd audit verify` reading the chain from etcd.
func TestCSCJourneyEtcd(t *testing.T) {
	e := newEtcdEnv(t, "", "")
	cred, base, _ := startJourney(t, e)
	conf, ctx := journeyClient(base)
	browser := oauthtest.NewBrowser(nil)

	service, err := conf.Exchange(ctx, codeFlow(t, browser, conf, "service", "state-service"))
	if err != nil {
		t.Fatalf("service token: %v", err)
	}
	status, info := postJSON(t, base+"/csc/v1/credentials/info", service.AccessToken,
		`{"credentialID":"`+cred+`","certificates":"chain"}`)
	if status != 200 {
		t.Fatalf("credentials/info: %d %v", status, info)
	}
	leafDER, _ := base64.StdEncoding.DecodeString(info["cert"].(map[string]any)["certificates"].([]any)[0].(string))

	digest := sha256.Sum256([]byte("%PDF-1.7 signed on etcd"))
	sad, err := conf.Exchange(ctx, codeFlow(t, browser, conf, "credential", "state-credential",
		oneSignature(cred, digest[:])...))
	if err != nil {
		t.Fatalf("SAD: %v", err)
	}
	e.signsOnce(base, service.AccessToken, cred, sad.AccessToken, digest[:], leafDER)
	if _, _, err := e.run("", "store", "check"); err == nil || !strings.Contains(err.Error(), "etcdctl snapshot save") {
		t.Errorf("store check on etcd: %v", err)
	}
}

// TestEtcdCluster: three signd nodes on one prefix of a 3-member etcd
// cluster and one token.
// A code redeemed at two nodes at once gives one token; a SAD presented at
// all three at once gives exactly one signature; the audit chain is one,
// intact, and verifiable from every node.
func TestEtcdCluster(t *testing.T) {
	nodes, bases, cred := startCluster(t, "")
	conf, ctx := journeyClient(bases[0])
	browser := oauthtest.NewBrowser(nil)

	// The same code at two nodes at once: one token.
	code := codeFlow(t, browser, conf, "service", "state-service")
	type result struct {
		tok *oauth2.Token
		err error
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			c, _ := journeyClient(bases[i+1])
			tok, err := c.Exchange(ctx, code)
			results[i] = result{tok, err}
		})
	}
	wg.Wait()
	var service *oauth2.Token
	for i, r := range results {
		var re *oauth2.RetrieveError
		switch {
		case r.err == nil:
			if service != nil {
				t.Fatalf("the code gave two tokens")
			}
			service = r.tok
		case !errors.As(r.err, &re) || re.ErrorCode != "invalid_grant":
			t.Errorf("node %d: exchange: %v", i+2, r.err)
		}
	}
	if service == nil {
		t.Fatal("the code gave no token")
	}
	// The loser saw the code redeemed: reuse revokes the token issued for
	// it (RFC 6749 §4.1.2), on every node.
	for i, base := range bases {
		if st, res := postJSON(t, base+"/csc/v1/credentials/list", service.AccessToken, `{}`); st != http.StatusUnauthorized {
			t.Errorf("node %d: the token of a reused code still works: %d %v", i+1, st, res)
		}
	}
	service, err := conf.Exchange(ctx, codeFlow(t, browser, conf, "service", "state-service-2"))
	if err != nil {
		t.Fatalf("service token: %v", err)
	}

	// The same SAD at three nodes at once: one signature.
	digest := sha256.Sum256([]byte("%PDF-1.7 one signature for three nodes"))
	sad, err := conf.Exchange(ctx, codeFlow(t, browser, conf, "credential", "state-credential",
		oneSignature(cred, digest[:])...))
	if err != nil {
		t.Fatalf("SAD: %v", err)
	}
	body := signHashBody(cred, sad.AccessToken, digest[:])
	statuses := make([]int, len(bases))
	descs := make([]any, len(bases))
	for i, base := range bases {
		wg.Go(func() {
			var res map[string]any
			statuses[i], res = postJSON(t, base+"/csc/v1/signatures/signHash", service.AccessToken, body)
			descs[i] = res["error_description"]
		})
	}
	wg.Wait()
	signed := 0
	for i, st := range statuses {
		switch {
		case st == http.StatusOK:
			signed++
		case st != http.StatusBadRequest || descs[i] != "Invalid parameter SAD":
			t.Errorf("node %d: signHash %d %v", i+1, st, descs[i])
		}
	}
	if signed != 1 {
		t.Fatalf("%d signatures from one SAD at three nodes, want 1", signed)
	}
	// Each node appends to its own chain (store.etcd.node), and every node
	// verifies every chain: the same chains at each.
	var chains []string
	for i, n := range nodes {
		if out := n.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: ") {
			t.Errorf("node %d: audit verify: %q", i+1, out)
		}
		var rep admin.AuditReport
		if err := json.Unmarshal([]byte(n.must("", "audit", "verify", "--json")), &rep); err != nil || !rep.OK {
			t.Fatalf("node %d: audit verify --json: %+v, %v", i+1, rep, err)
		}
		var names []string
		for _, c := range rep.Chains {
			if c.Chain != "" && c.Entries > 0 {
				names = append(names, c.Chain)
			}
		}
		if len(names) != len(nodes) || (chains != nil && !slices.Equal(names, chains)) {
			t.Errorf("node %d verified the chains %v, want one per node (node 1: %v)", i+1, names, chains)
		}
		chains = names
	}
	// The export merges the chains in cluster order: revisions never go
	// back, every chain's entries in sequence, every chain there.
	var last int64
	seqs := map[string]uint64{}
	for _, ent := range logtest.Lines[struct {
		Seq   uint64
		Chain string
		Rev   int64
	}](t, nodes[1].must("", "audit", "export")) {
		if ent.Rev < last || ent.Seq != seqs[ent.Chain]+1 {
			t.Fatalf("export entry %+v after revision %d, entry %d of its chain", ent, last, seqs[ent.Chain])
		}
		last, seqs[ent.Chain] = ent.Rev, ent.Seq
	}
	for _, c := range chains {
		if seqs[c] == 0 {
			t.Errorf("the export holds no entry of chain %s", c)
		}
	}
}

// startCluster starts three nodes on one fresh prefix of the 3-member etcd
// cluster (every member's endpoint in each config) with extra config (as
// for newEnv), after adding alice and rp through the first; it returns the
// nodes, their URLs and alice's credential.
func startCluster(t *testing.T, extra string) (nodes []*env, bases []string, cred string) {
	t.Helper()
	cl := sharedCluster(t)
	prefix := cl.Prefix()
	for range 3 {
		nodes = append(nodes, newEtcdEnvOn(t, cl.Endpoints, prefix, extra))
	}
	// One installation: the nodes share the pairwise salt (a file every
	// node of a real deployment gets from the same secret).
	salt := filepath.Join(nodes[0].dir, "pairwise.salt")
	for _, n := range nodes[1:] {
		n.setConfig("pairwise_salt_file: "+n.dir+"/pairwise.salt", "pairwise_salt_file: "+salt)
	}
	cred = journeyAlice(t, nodes[0])
	for _, n := range nodes {
		addr, _ := n.startDaemon()
		bases = append(bases, "http://"+addr)
	}
	return nodes, bases, cred
}

// TestEtcdClusterPINLockout: twenty-one wrong PINs fired at once, spread
// over three nodes (oauth.max_failures 3): at most max_failures-1 are
// answered "wrong PIN", the rest find the PIN locked, and the store
// counted exactly 3 failures and locked the PIN.
func TestEtcdClusterPINLockout(t *testing.T) {
	nodes, bases, cred := startCluster(t, "oauth:\n  max_failures: 3\n")
	digest := sha256.Sum256([]byte("%PDF-1.7 guessed at three nodes"))
	const n = 21
	browsers, pages := make([]*oauthtest.Browser, n), make([]*oauthtest.Step, n)
	for i := range n {
		conf, _ := journeyClient(bases[i%len(bases)])
		conf.Scopes = []string{"credential"}
		b := oauthtest.NewBrowser(nil)
		s, err := b.Get(conf.AuthCodeURL("st", oneSignature(cred, digest[:], oauth2.SetAuthURLParam("lang", "en"))...))
		if err == nil {
			s, err = b.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve")
		}
		if err != nil || s.Form == nil || !s.Form.Has("pin") {
			t.Fatalf("node %d: no PIN page: %v %+v", i%len(bases)+1, err, s)
		}
		browsers[i], pages[i] = b, s
	}
	wrongPages := guessPINsAtOnce(t, browsers, pages, func(i int) string { return fmt.Sprintf(" (node %d)", i%len(bases)+1) })
	if wrongPages > 2 {
		t.Errorf("%d wrong PINs were answered \"wrong PIN\": more than max_failures-1 were evaluated", wrongPages)
	}
	db, err := sharedCluster(t).Open(etcd.Options{Prefix: nodePrefix(t, nodes[0])})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var u *store.User
	if err := db.View(context.Background(), func(tx store.Tx) (err error) { u, err = tx.User("alice"); return err }); err != nil {
		t.Fatal(err)
	}
	if u.FailedPINs != 3 || !u.PINLocked {
		t.Errorf("alice after %d wrong PINs at three nodes: %d failures counted, locked %v; want 3, true", n, u.FailedPINs, u.PINLocked)
	}
}

// nodePrefix reads store.etcd.prefix back from a node's config file.
func nodePrefix(t *testing.T, e *env) string {
	t.Helper()
	data, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "prefix: "); ok {
			return p
		}
	}
	t.Fatal("no store.etcd.prefix in the config")
	return ""
}

// TestEtcdQuorumLost: a node whose etcd is gone answers 503 within
// store.etcd.request_timeout, on the API and on /readyz, instead of
// hanging or answering a client error.
func TestEtcdQuorumLost(t *testing.T) {
	srv, err := etcdtest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.Close()
		}
	}()
	e := newEnv(t, "")
	e.setConfig("store:\n", fmt.Sprintf("store:\n  backend: etcd\n  etcd:\n    endpoints: [%s]\n    dial_timeout: 1s\n    request_timeout: 1s\n",
		strings.Join(srv.Endpoints, ", ")))
	_, base, stopDaemon := startJourney(t, e)
	conf, ctx := journeyClient(base)
	service, err := conf.Exchange(ctx, codeFlow(t, oauthtest.NewBrowser(nil), conf, "service", "state-service"))
	if err != nil {
		t.Fatalf("service token: %v", err)
	}
	if st, res := postJSON(t, base+"/csc/v1/credentials/list", service.AccessToken, `{}`); st != http.StatusOK {
		t.Fatalf("credentials/list: %d %v", st, res)
	}
	ready := func() int {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := ready(); st != http.StatusOK {
		t.Fatalf("/readyz with etcd: %d", st)
	}

	srv.Close()
	stopped = true
	start := time.Now()
	if st, res := postJSON(t, base+"/csc/v1/credentials/list", service.AccessToken, `{}`); st != http.StatusServiceUnavailable {
		t.Errorf("credentials/list without etcd: %d %v, want 503", st, res)
	}
	if st := ready(); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz without etcd: %d, want 503", st)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("answering took %s without etcd", d)
	}
	t.Logf("answered in %s", time.Since(start))
	// Stopping must not wait for the quorum (the sweeper election's
	// resignation and lease revocation are bounded): a generous liveness
	// bound, not a speed.
	start = time.Now()
	stopDaemon()
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("stopping without etcd took %s", d)
	}
	t.Logf("stopped in %s", time.Since(start))
}

// copyToken copies the package's SoftHSM2 token directory into dir (the
// token as it is now: same label and PIN, the keys made so far, none made
// later) and returns the path of a softhsm2.conf that points at the copy:
// the HSM of a node that has not received the keys made since.
func copyToken(t *testing.T, dir string) string {
	t.Helper()
	src, dst := filepath.Join(token.Dir, "tokens"), filepath.Join(dir, "hsm", "tokens")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(token.Conf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(conf, []byte(src)) {
		t.Fatalf("%s does not name %s", token.Conf, src)
	}
	path := filepath.Join(dir, "hsm", "softhsm2.conf")
	if err := os.WriteFile(path, bytes.ReplaceAll(conf, []byte(src), []byte(dst)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEtcdKeyMissingOnNode: two signd processes on one etcd prefix, each
// with its own SoftHSM2 token directory: node B's is a copy of node A's
// made before a credential was enrolled through A (an HSM that has not
// received that key). signHash at B with that credential is B's fault,
// not the client's: 503 temporarily_unavailable naming the node, with
// Retry-After, the SAD not spent, a warning with the credential ID (and
// not the SAD) in B's log. B stays ready, answers credentials/info for the
// credential and signs with one whose key it holds. The same SAD then
// signs at A, once.
func TestEtcdKeyMissingOnNode(t *testing.T) {
	srv := sharedEtcd(t)
	nodes, db := haNodes(t, srv, srv.Endpoints, 2)
	nodeA, nodeB := nodes[0], nodes[1]
	nodeA.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	both := haEnroll(t, nodeA, db, "alice") // on A's token before the copy
	a, _ := nodeA.startChild()
	defer a.stop(t)
	b, _ := nodeB.startChild("SOFTHSM2_CONF=" + copyToken(t, nodeB.dir))
	defer b.stop(t)
	baseA, baseB := "http://"+a.addr, "http://"+b.addr
	onlyA := haCredential(t, nodeA, db, "alice") // by A's process: A's token only
	bearer, sads := haMint(t, db, "alice", "rp", onlyA.cred, 1)
	_, bothSADs := haMint(t, db, "alice", "rp", both.cred, 1)

	res, m, err := signHash(http.DefaultClient, baseB, bearer, onlyA.cred, sads[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusServiceUnavailable || m["error"] != "temporarily_unavailable" ||
		m["error_description"] != "The signing key is not available on this node, try again later" || len(m) != 2 {
		t.Errorf("signHash at the node without the key: %d %v", res.StatusCode, m)
	}
	if ra := res.Header.Get("Retry-After"); ra == "" {
		t.Error("503 without Retry-After")
	}
	err = db.View(context.Background(), func(tx store.Tx) error {
		_, err := tx.Token(store.Fingerprint(sads[0].sad))
		return err
	})
	if err != nil {
		t.Errorf("the SAD after the 503: %v, want it unspent", err)
	}
	warned := false
	for line := range strings.Lines(b.logs.String()) {
		if strings.Contains(line, sads[0].sad) || strings.Contains(line, bearer) {
			t.Errorf("node B logged a secret: %s", line)
		}
		var l struct{ Level, Msg, Credential string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Level == "WARN" && l.Credential == onlyA.cred &&
			strings.Contains(l.Msg, "not on this node") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("node B logged no warning naming credential %s:\n%s", onlyA.cred, b.logs.String())
	}

	// Node B stays ready: its token works, and so do its other keys.
	if res, err := http.Get(baseB + "/readyz"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("/readyz at node B: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if st, info := postJSON(t, baseB+"/csc/v1/credentials/info", bearer, `{"credentialID":"`+onlyA.cred+`"}`); st != http.StatusOK {
		t.Errorf("credentials/info at node B: %d %v", st, info)
	}
	res, m, err = signHash(http.DefaultClient, baseB, bearer, both.cred, bothSADs[0])
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("signHash at node B with a key on its token: %v %v", err, m)
	}
	verifySig(t, both, bothSADs[0], m)

	// The client's retry at node A signs, once.
	res, m, err = signHash(http.DefaultClient, baseA, bearer, onlyA.cred, sads[0])
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("signHash at node A with the SAD refused at B: %v %v", err, m)
	}
	verifySig(t, onlyA, sads[0], m)
	if res, m, err = signHash(http.DefaultClient, baseA, bearer, onlyA.cred, sads[0]); err != nil ||
		res.StatusCode != http.StatusBadRequest || m["error_description"] != "Invalid parameter SAD" {
		t.Errorf("the SAD again at node A: %v %v", err, m)
	}
	reasons := map[string]int{}
	for _, ent := range logtest.Lines[struct{ Kind, Outcome, Reason string }](t, nodeB.must("", "audit", "export")) {
		if ent.Kind == string(store.AuditSignHash) {
			reasons[ent.Outcome+": "+ent.Reason]++
		}
	}
	if reasons["refused: signing key not available on this node (SAD not consumed)"] != 1 {
		t.Errorf("signHash audit entries: %v", reasons)
	}
	if granted := nodeB.grantedDigests()[hex.EncodeToString(sads[0].digest)]; granted != 1 {
		t.Errorf("the SAD refused at B and signed at A: %d granted entries, want 1", granted)
	}
}

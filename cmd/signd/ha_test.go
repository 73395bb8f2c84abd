package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
)

// etcdCluster is an etcd cluster of this package's tests: in this process
// (etcdtest.Cluster) or as member processes (etcdtest.ProcessCluster).
type etcdCluster interface {
	Prefix() string
	Open(etcd.Options) (*etcd.DB, error)
}

// haNodes makes n signd installations on one prefix of cluster cl, whose
// members serve at endpoints (every member's endpoint in each config,
// short etcd timeouts so that a lost quorum is answered 503 quickly),
// sharing the pairwise salt as the nodes of one deployment do. It returns
// the nodes and a store opened on their prefix, for fixtures and checks
// (closed when the test ends).
func haNodes(t *testing.T, cl etcdCluster, endpoints []string, n int) ([]*env, *etcd.DB) {
	t.Helper()
	prefix := cl.Prefix()
	var nodes []*env
	for i := range n {
		e := newEnv(t, "")
		// Each node its own audit chain (store.etcd.node).
		e.setConfig("store:\n", fmt.Sprintf("store:\n  backend: etcd\n  etcd:\n    endpoints: [%s]\n    prefix: %s\n    node: node%d\n    dial_timeout: 1s\n    request_timeout: 2s\n",
			strings.Join(endpoints, ", "), prefix, i+1))
		nodes = append(nodes, e)
	}
	salt := filepath.Join(nodes[0].dir, "pairwise.salt")
	for _, e := range nodes[1:] {
		e.setConfig("pairwise_salt_file: "+e.dir+"/pairwise.salt", "pairwise_salt_file: "+salt)
	}
	db, err := cl.Open(etcd.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return nodes, db
}

// haEnroll adds user with client rp and an enabled credential through the
// CLI of e (the test process opens the token, as an operator's shell
// does), and reads the certificate back from db.
func haEnroll(t *testing.T, e *env, db store.Store, user string) enrolled {
	t.Helper()
	e.must("a long password\n", "user", "add", user, "--password-file", "-")
	return haCredential(t, e, db, user)
}

// haCredential enrolls one more credential for user through e's CLI.
func haCredential(t *testing.T, e *env, db store.Store, user string) enrolled {
	t.Helper()
	return enrolledOf(t, db, enrollKey(t, e, user, "CN="+user+",O=Example"))
}

// haMint stores a service access token of user and client and n SADs for
// cred, each for its own random digest; it returns the token.
func haMint(t *testing.T, db store.Store, user, client, cred string, n int) (string, []sadFixture) {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	bearer := base64.RawURLEncoding.EncodeToString(b)
	sads := make([]sadFixture, n)
	err := db.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.CreateToken(&store.Token{Hash: store.Fingerprint(bearer), Kind: store.TokenAccess, ClientID: client,
			Username: user, Scopes: []string{"service"}, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			return err
		}
		for i := range sads {
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			d := sha256.Sum256(b)
			sads[i] = sadFixture{sad: base64.RawURLEncoding.EncodeToString(b), digest: d[:]}
			if err := tx.CreateToken(&store.Token{
				Hash: store.Fingerprint(sads[i].sad), Kind: store.TokenSAD, ClientID: client, Username: user,
				Scopes: []string{"credential"}, CredentialID: cred, Hashes: [][]byte{d[:]}, ExpiresAt: time.Now().Add(time.Hour),
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bearer, sads
}

// loadGen sends signHash requests to a set of nodes. A request that gets
// no answer, or a 503, is sent again with the same SAD to the next node,
// as a client behind a round-robin front does. It counts the signatures
// received per digest.
type loadGen struct {
	t      *testing.T
	who    enrolled
	bearer string
	bases  []string
	client *http.Client

	mu       sync.Mutex
	signed   map[string]int // hex digest → signatures received
	settled  int            // SADs found spent by a race or an attempt in doubt
	refused  int            // 503 answers
	failover int            // attempts sent again to another node
	// stall is the longest time a SAD waited from its first request to
	// its answer (its signature, or found spent), the 503s and the
	// requests sent again to another node included.
	stall time.Duration
	ok    atomic.Int64
}

func newLoadGen(t *testing.T, who enrolled, bearer string, bases []string) *loadGen {
	return &loadGen{t: t, who: who, bearer: bearer, bases: bases, signed: map[string]int{},
		client: &http.Client{Timeout: 10 * time.Second}}
}

// spend sends f, starting at node first, until a node answers other than
// 503 or deadline passes; it reports whether f was settled (signed, or
// found spent). raced says that another request holds f at the same time:
// then, as after an attempt whose answer was lost, "Invalid parameter
// SAD" is an answer the SAD may get.
func (g *loadGen) spend(f sadFixture, first int, deadline time.Time, raced bool) bool {
	doubt := raced
	start := time.Now()
	defer func() {
		g.mu.Lock()
		g.stall = max(g.stall, time.Since(start))
		g.mu.Unlock()
	}()
	for i := first; time.Now().Before(deadline); i++ {
		res, m, err := signHash(g.client, g.bases[i%len(g.bases)], g.bearer, g.who.cred, f)
		switch {
		case err != nil || res.StatusCode == http.StatusServiceUnavailable:
			g.mu.Lock()
			g.failover++
			if err == nil {
				g.refused++
			}
			g.mu.Unlock()
			doubt = true
			time.Sleep(50 * time.Millisecond)
			continue
		case res.StatusCode == http.StatusOK:
			verifySig(g.t, g.who, f, m)
			d := hex.EncodeToString(f.digest)
			g.mu.Lock()
			g.signed[d]++
			if g.signed[d] == 2 {
				g.t.Errorf("the SAD for %s signed twice (the second at %s)", d, g.bases[i%len(g.bases)])
			}
			g.mu.Unlock()
			g.ok.Add(1)
		case res.StatusCode == http.StatusBadRequest && m["error_description"] == "Invalid parameter SAD" && doubt:
			// Spent by the racing request, or by the attempt whose answer
			// was lost (no signature reached a client for it then).
			g.mu.Lock()
			g.settled++
			g.mu.Unlock()
		default:
			g.t.Errorf("signHash at %s (in doubt %v): %d %v", g.bases[i%len(g.bases)], doubt, res.StatusCode, m)
		}
		return true
	}
	return false
}

// TestEtcdFailoverUnderLoad: three signd processes and a 3-member etcd
// cluster whose members are processes too (signd-cluster etcd: embedded
// etcd, data fsynced), on one SoftHSM2 token. During signHash load (fresh
// SADs, each sent to two nodes at once; a failed request sent again with
// the same SAD to the next node) one signd node is killed with SIGKILL,
// then the process of the etcd leader (found with etcd's Status API). No
// SAD yields two signatures and the cluster keeps serving with 2 of 3
// members; no SAD waits for its answer as long as the default request
// timeout (5 s) of node 1: a request held by a member whose leader died
// moves on after one attempt (the health timeout, 1 s). With a second
// member killed (no quorum) both surviving nodes refuse signHash with 503
// and Retry-After, /readyz answers 503 within the health timeout, and one
// of them, stopped with SIGTERM while a signHash is in flight, answers it
// 503 and exits cleanly within seconds. Once the members are restarted
// from their data directories nothing acknowledged is lost: the SADs
// refused are settled (the one answered 503 during the stop signs, once),
// a fresh one signs, and every signature received has exactly one
// "granted" entry in the audit chain, which verifies from two nodes.
func TestEtcdFailoverUnderLoad(t *testing.T) {
	t0 := time.Now()
	cl, err := etcdtest.StartProcessCluster(signdClusterBinary(t), t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	t.Logf("etcd members (processes) ready in %s", time.Since(t0).Round(time.Millisecond))
	nodes, db := haNodes(t, cl, cl.Endpoints, 3)
	// Nodes 1 and 2 run with the default etcd timeouts (a request of 5 s,
	// attempts of 1 s); node 3, stopped below while a request waits on
	// etcd, keeps a 2 s request, so that it stops within the bound.
	for _, e := range nodes[:2] {
		e.setConfig("    request_timeout: 2s\n", "")
	}
	nodes[0].must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	alice := haEnroll(t, nodes[0], db, "alice")
	// The load runs until stopped: it needs SADs for some seconds.
	const pool, workers = 400, 6
	bearer, sads := haMint(t, db, "alice", "rp", alice.cred, pool+3)
	sads, late := sads[:pool], sads[pool:]

	children := make([]*child, len(nodes))
	var bases []string
	begin := time.Now()
	for i, e := range nodes {
		children[i], _ = e.startChild()
		bases = append(bases, "http://"+children[i].addr)
	}
	t.Logf("three nodes ready in %s (%s since the start)", time.Since(begin).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	alive := []bool{true, true, true}
	defer func() {
		for i, c := range children {
			if alive[i] {
				c.kill(t)
			}
		}
	}()

	g := newLoadGen(t, alice, bearer, bases)
	work := make(chan int, pool)
	for i := range sads {
		work <- i
	}
	close(work)
	stop := make(chan struct{})
	deadline := time.Now().Add(40 * time.Second)
	var unsettled atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				select {
				case <-stop:
					return
				default:
				}
				// Every SAD is sent to two nodes at once: a double
				// spend across nodes during the failover.
				var pair sync.WaitGroup
				for k := range 2 {
					pair.Go(func() {
						if !g.spend(sads[i], i+k, deadline, true) {
							unsettled.Add(1)
						}
					})
				}
				pair.Wait()
			}
		})
	}
	// The faults, while the load runs: kill -9 node 2 after 30
	// signatures, kill -9 the etcd leader after 30 more; stop the load 60
	// signatures later.
	waitFor := func(n int64) bool {
		for g.ok.Load() < n {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(10 * time.Millisecond)
		}
		return true
	}
	begin = time.Now()
	waitFor(30)
	children[1].kill(t)
	alive[1] = false
	waitFor(g.ok.Load() + 30)
	lead := cl.Leader()
	if lead < 0 {
		t.Fatal("the etcd cluster has no leader")
	}
	atKill := g.ok.Load()
	killedAt := time.Now()
	cl.Kill(lead)
	served := waitFor(atKill + 60)
	close(stop)
	wg.Wait()
	after := g.ok.Load() - atKill
	g.mu.Lock()
	stall := g.stall
	g.mu.Unlock()
	t.Logf("%d signatures in %s, %d after the etcd leader (member %d) was killed (in %s), %d retried on another node (%d 503s), %d settled as spent; the longest wait of a SAD for its answer %s",
		g.ok.Load(), time.Since(begin).Round(time.Millisecond), after, lead, time.Since(killedAt).Round(time.Millisecond), g.failover, g.refused, g.settled, stall.Round(time.Millisecond))
	if n := unsettled.Load(); n > 0 {
		t.Fatalf("%d SADs were not settled within the deadline", n)
	}
	if !served {
		t.Fatalf("only %d signatures with 2 of 3 etcd members and 2 of 3 nodes", after)
	}
	// A generous bound, not a speed: a request held for the whole request
	// timeout (5 s) by a member whose leader died exceeds it.
	if stall > 3500*time.Millisecond {
		t.Errorf("a SAD waited %s for its answer across the leader's failover (request timeout 5 s, health timeout 1 s)", stall.Round(time.Millisecond))
	}

	// No quorum: kill a second member. Writes are refused with 503.
	other := (lead + 1) % 3
	begin = time.Now()
	cl.Kill(other)
	refused, inFlight, fresh := late[0], late[1], late[2]
	var quorumless sync.WaitGroup
	for _, i := range []int{0, 2} {
		quorumless.Go(func() {
			start := time.Now()
			res, m, err := signHash(g.client, bases[i], bearer, alice.cred, refused)
			switch {
			case err != nil:
				t.Errorf("node %d without quorum: %v", i+1, err)
			case res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "":
				t.Errorf("node %d signHash without quorum: %d %v (Retry-After %q), want 503 with Retry-After",
					i+1, res.StatusCode, m, res.Header.Get("Retry-After"))
			default:
				t.Logf("node %d without quorum: 503 in %s", i+1, time.Since(start).Round(time.Millisecond))
			}
		})
	}
	quorumless.Wait()
	// /readyz: 503 with Retry-After within the health timeout (1 s; a
	// generous 3 s bound), not the request timeout (5 s), so that a load
	// balancer's health check with a shorter timeout than the request's
	// sees the 503.
	for _, i := range []int{0, 2} {
		start := time.Now()
		res, err := g.client.Get(bases[i] + "/readyz")
		took := time.Since(start)
		if err != nil {
			t.Errorf("/readyz at node %d without quorum: %v", i+1, err)
			continue
		}
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Errorf("/readyz at node %d without quorum: %d (Retry-After %q), want 503 with Retry-After", i+1, res.StatusCode, res.Header.Get("Retry-After"))
		}
		if took > 3*time.Second {
			t.Errorf("/readyz at node %d without quorum answered in %s; the health timeout is 1 s", i+1, took.Round(time.Millisecond))
		}
		t.Logf("/readyz at node %d without quorum: %d in %s", i+1, res.StatusCode, took.Round(time.Millisecond))
	}

	// Stopping without quorum: node 3 gets SIGTERM while a signHash is in
	// flight. The request is answered 503 (its SAD untouched) and the
	// process exits cleanly, without waiting for etcd. Node 3 campaigns
	// for the sweeper (node 1, started first, was elected): the campaign
	// etcd's client would resign with its own context, waiting many
	// seconds for a quorum, is abandoned.
	type answer struct {
		status int
		body   map[string]any
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		res, m, err := signHash(g.client, bases[2], bearer, alice.cred, inFlight)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		answered <- answer{status: res.StatusCode, body: m}
	}()
	time.Sleep(800 * time.Millisecond) // the request waits for etcd (store.etcd.request_timeout 2s)
	stopAt := time.Now()
	_ = children[2].cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-children[2].done:
		alive[2] = false
		if err != nil {
			t.Errorf("node 3 stopped without quorum: %v\n%s", err, children[2].logs.String())
		}
		t.Logf("node 3 stopped without quorum in %s", time.Since(stopAt).Round(time.Millisecond))
	case <-time.After(8 * time.Second):
		t.Errorf("node 3 did not exit within 8 s of SIGTERM without quorum\n%s", children[2].logs.String())
		<-children[2].done
		alive[2] = false
	}
	if a := <-answered; a.err != nil || a.status != http.StatusServiceUnavailable {
		t.Errorf("signHash in flight while node 3 stopped: %d %v %v, want 503", a.status, a.body, a.err)
	}

	// Quorum back: the members restart from their data. The SAD refused
	// by both nodes signs (or was spent by a commit that went through
	// after all, never twice); the one answered 503 during the stop and
	// a fresh one sign.
	for _, i := range []int{lead, other} {
		if err := cl.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	back := time.Now().Add(30 * time.Second)
	if !g.spend(refused, 0, back, true) || !g.spend(inFlight, 0, back, false) || !g.spend(fresh, 0, back, false) {
		t.Fatal("the cluster did not serve again once quorum was back")
	}
	t.Logf("quorum lost and back in %s", time.Since(begin).Round(time.Millisecond))
	for _, f := range []sadFixture{inFlight, fresh} {
		if n := g.signed[hex.EncodeToString(f.digest)]; n != 1 {
			t.Errorf("a SAD answered 503 or fresh after quorum came back signed %d times, want 1", n)
		}
	}
	children[0].stop(t)
	alive[0] = false

	// The audit chain, exported through a node whose daemon stopped
	// without quorum, verifies and holds every signature received exactly
	// once; it verifies at node 1 too.
	if t.Failed() {
		t.FailNow()
	}
	granted := nodes[2].grantedDigests()
	for d := range g.signed {
		if granted[d] != 1 {
			t.Errorf("digest %s: a signature was received, %d granted audit entries", d, granted[d])
		}
	}
	for d, n := range granted {
		if n > 1 {
			t.Errorf("digest %s granted %d times", d, n)
		}
	}
	if len(g.signed) == 0 {
		t.Fatal("no signature was received")
	}
	if out := nodes[0].must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact") {
		t.Errorf("audit verify at node 1: %q", out)
	}
}

// signd-cluster, built once for the package's tests (its etcd subcommand
// runs one etcd member as a process); removed by stopCluster.
var clusterBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// signdClusterBinary builds cmd/signd-cluster (go build) and returns its
// path.
func signdClusterBinary(t *testing.T) string {
	t.Helper()
	clusterBin.once.Do(func() {
		if clusterBin.dir, clusterBin.err = os.MkdirTemp("", "sd-cluster-"); clusterBin.err != nil {
			return
		}
		path := filepath.Join(clusterBin.dir, "signd-cluster")
		out, err := exec.Command("go", "build", "-o", path, "github.com/signd/signd/cmd/signd-cluster").CombinedOutput()
		if err != nil {
			clusterBin.err = fmt.Errorf("go build ./cmd/signd-cluster: %v\n%s", err, out)
			return
		}
		clusterBin.path = path
	})
	if clusterBin.err != nil {
		t.Fatal(clusterBin.err)
	}
	return clusterBin.path
}

// clusterServer is the embedded 3-member etcd cluster of this package's
// cluster tests: started by the first test that needs it, stopped by
// TestMain (stopCluster). Tests that stop or kill members start their own.
var clusterServer lazyServer[*etcdtest.Cluster]

// sharedCluster returns the package's 3-member etcd cluster, starting it
// once.
func sharedCluster(t *testing.T) *etcdtest.Cluster {
	t.Helper()
	return clusterServer.get(t, "signd-etcd-cluster-", func(dir string) (*etcdtest.Cluster, error) {
		return etcdtest.StartCluster(dir, 3)
	})
}

// stopCluster stops the shared cluster if a test started it, and removes
// the signd-cluster binary if a test built it.
func stopCluster() {
	if clusterBin.dir != "" {
		os.RemoveAll(clusterBin.dir)
	}
	clusterServer.stop()
}

// jwksKIDs returns the key IDs of the JWKS a node serves, and the set.
func jwksKIDs(t *testing.T, base string) ([]string, *jose.JSONWebKeySet) {
	t.Helper()
	res, err := http.Get(base + oidc.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.KeyID)
	}
	slices.Sort(kids)
	return kids, &set
}

// TestEtcdKeysAcrossNodes: two signd processes on one etcd prefix and one
// SoftHSM2 token directory. A credential enrolled through node A after
// node B started signs through node B (B finds the key handle it has never
// seen). An ID-token key created and rotated in on node A is in the JWKS
// of both nodes at once, and node B signs ID tokens with it, verifiable
// with node A's JWKS.
func TestEtcdKeysAcrossNodes(t *testing.T) {
	cl := sharedCluster(t)
	nodes, db := haNodes(t, cl, cl.Endpoints, 2)
	secret := addAliceAndRP(nodes[0], "openid", "service", "credential")
	b, _ := nodes[1].startChild() // B first: it makes the first ID-token key
	defer b.stop(t)
	a, _ := nodes[0].startChild()
	defer a.stop(t)
	baseA, baseB := "http://"+a.addr, "http://"+b.addr

	// The credential is made by node A's process (the CLI goes through
	// its admin socket), after node B opened the token.
	alice := haCredential(t, nodes[0], db, "alice")
	bearer, sads := haMint(t, db, "alice", "rp", alice.cred, 1)
	res, m, err := signHash(http.DefaultClient, baseB, bearer, alice.cred, sads[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("node B signHash with a key made at node A: %d %v\nnode B log:\n%s", res.StatusCode, m, b.logs.String())
	}
	verifySig(t, alice, sads[0], m)

	// ID-token keys: create and rotate at node A; both JWKS follow.
	first, _ := jwksKIDs(t, baseB)
	if got, _ := jwksKIDs(t, baseA); len(first) != 1 || !slices.Equal(got, first) {
		t.Fatalf("JWKS at start: A %v, B %v; want the one key B made", got, first)
	}
	nodes[0].must("", "oidc", "keys", "create")
	nodes[0].must("", "oidc", "keys", "rotate", "--force")
	var active string
	for _, k := range nodes[0].oidcKeys() {
		if k.State == "active" {
			active = k.KID
		}
	}
	kidsA, setA := jwksKIDs(t, baseA)
	kidsB, _ := jwksKIDs(t, baseB)
	if len(kidsA) != 2 || !slices.Equal(kidsA, kidsB) || !slices.Contains(kidsA, active) || !slices.Contains(kidsA, first[0]) {
		t.Fatalf("JWKS after a rotation at node A: A %v, B %v; want both of %s (retired) and %s (active)", kidsA, kidsB, first[0], active)
	}

	// An ID token from node B: signed with the key node A made, verified
	// with node A's JWKS.
	conf := oauth2.Config{ClientID: "rp", ClientSecret: secret, RedirectURL: "https://rp.example.com/cb", Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: baseB + oidc.PathAuthorize, TokenURL: baseB + oidc.PathToken, AuthStyle: oauth2.AuthStyleInHeader}}
	browser := oauthtest.NewBrowser(nil)
	s, err := browser.Get(conf.AuthCodeURL("st", oauth2.SetAuthURLParam("nonce", "n-1")))
	if err == nil && s.Form != nil {
		s, err = browser.Submit(s.Form, map[string]string{"username": "alice", "password": "a password!"}, "approve")
	}
	if err == nil && s.Form != nil {
		s, err = browser.Submit(s.Form, nil, "approve")
	}
	if err != nil || !s.Redirected() {
		t.Fatalf("authorize at node B: %v %+v", err, s)
	}
	tok, err := conf.Exchange(context.Background(), s.Query().Get("code"))
	if err != nil {
		t.Fatalf("token at node B: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("ID token %q: %v", raw, err)
	}
	kid := jws.Signatures[0].Header.KeyID
	if kid != active {
		t.Errorf("node B signed the ID token with %s, want the active key %s", kid, active)
	}
	keys := setA.Key(kid)
	if len(keys) != 1 {
		t.Fatalf("node A's JWKS has no key %s", kid)
	}
	if _, err := jws.Verify(keys[0]); err != nil {
		t.Errorf("the ID token of node B does not verify with node A's JWKS: %v", err)
	}
}

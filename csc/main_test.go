package csc_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
)

// The token and keys every test shares: a software token
// (hsm/hsmtest/softtoken), two RSA-2048 keys generated inside it, and a
// throwaway CA (crypto/rsa) that issues certificates for them. The real
// token signing through signHash is cmd/signd's concern.
var (
	token      = softtoken.New(softtoken.Options{})
	keyA, keyB *hsm.KeyInfo
	caKey      *rsa.PrivateKey
	caCert     *x509.Certificate
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	ctx := context.Background()
	var err error
	if keyA, err = token.GenerateRSA(ctx, "csc-a", 2048); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if keyB, err = token.GenerateRSA(ctx, "csc-b", 2048); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if caKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "signd test CA", Organization: []string{"Test CA Org"}},
		NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	caCert, _ = x509.ParseCertificate(der)
	if apiRouter, err = loadOpenAPI(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// clock is the shared settable test clock.
type clock = storetest.Clock

// env is one CSC API over a fresh store (store/memory; newBoltEnv: a bbolt
// file), served by a real Echo router on a loopback httptest server.
type env struct {
	t       testing.TB
	db      fixtureStore
	dbPath  string // the bbolt file of newBoltEnv
	h       *csc.Handler
	srv     *httptest.Server
	clock   *clock
	metrics *recordingMetrics
	creds   map[string]*store.Credential // by ID
}

type envOption func(*csc.Handler)

func withSigner(s csc.Signer) envOption { return func(h *csc.Handler) { h.Signer = s } }

// fixtureStore is what env needs of its store.
type fixtureStore interface {
	store.Store
	store.Batcher
	Secret(ctx context.Context, name string, size int) ([]byte, error)
}

// newEnv is an env over an empty in-memory store.
func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	return newEnvWith(t, memory.New(memory.Options{}), "", opts...)
}

// newBoltEnv is an env over a fresh bbolt file, for the tests whose subject
// is what the file holds.
func newBoltEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "signd.db")
	db, err := bolt.Open(dbPath, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, db, dbPath, opts...)
}

func newEnvWith(t testing.TB, db fixtureStore, dbPath string, opts ...envOption) *env {
	t.Helper()
	key, err := db.Secret(context.Background(), "csc_page_token", 32)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{
		t: t, db: db, dbPath: dbPath, clock: storetest.NewClock(time.Now().UTC().Round(time.Second)),
		metrics: &recordingMetrics{}, creds: map[string]*store.Credential{},
	}
	e.h = &csc.Handler{
		Store: cscStore(db), Signer: token,
		BaseURL: "https://sign.example.com",
		Info: csc.InfoConfig{
			Name: "signd test", Logo: "https://sign.example.com/logo.png", Region: "NL",
			Lang: "en-US", Description: "test service",
		},
		MaxResultsDefault: 100, MaxResultsLimit: 1000,
		PageTokenKey: key, Now: e.clock.Now, Metrics: e.metrics,
	}
	for _, o := range opts {
		o(e.h)
	}
	ec := echo.New()
	ec.HTTPErrorHandler = oauth.NewRenderer(nil).Handle
	// The test client is its own trusted proxy: a test names the remote
	// address with X-Forwarded-For (the daemon believes it only from
	// server.trusted_proxies: cmd/signd's tests).
	ec.IPExtractor = echo.ExtractIPFromXFFHeader(echo.TrustLoopback(true))
	if err := e.h.Mount(ec.Group("/csc/v1")); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(ec)
	t.Cleanup(func() {
		e.srv.Close()
		// Whatever a test did, the audit chain holds.
		err := db.View(context.Background(), func(tx store.Tx) error {
			_, _, err := store.VerifyAudit(tx)
			return err
		})
		if err != nil {
			t.Errorf("audit log: %v", err)
		}
		db.Close()
	})
	e.update(func(tx store.Tx) error {
		for _, u := range []string{"alice", "bob"} {
			id, _ := store.NewID()
			if err := tx.CreateUser(&store.User{ID: id, Username: u, Status: store.UserActive}); err != nil {
				return err
			}
		}
		for _, c := range []string{"rp1", "rp2"} {
			err := tx.CreateClient(&store.Client{
				ID: c, SecretHash: store.HashSecret(strings.Repeat("s", 32)),
				RedirectURIs: []string{"https://" + c + ".example.com/cb"}, Scopes: []string{"service", "credential"},
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return e
}

func (e *env) update(fn func(tx store.Tx) error) {
	e.t.Helper()
	if err := e.db.Update(context.Background(), fn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) view(fn func(tx store.Tx) error) {
	e.t.Helper()
	if err := e.db.View(context.Background(), fn); err != nil {
		e.t.Fatal(err)
	}
}

// certFor issues a leaf for key valid from nb to na.
func certFor(t testing.TB, key *hsm.KeyInfo, cn string, nb, na time.Time) []byte {
	t.Helper()
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"Example Org"}, Country: []string{"NL"}},
		NotBefore: nb, NotAfter: na, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// credSpec describes a credential fixture.
type credSpec struct {
	owner  string
	key    *hsm.KeyInfo
	status store.CredentialStatus
	nb, na time.Duration // validity relative to the env clock
	desc   string
	// chain, when set, is the credential's chain instead of a leaf from
	// the test CA (certFor).
	chain [][]byte
}

func valid(owner string, key *hsm.KeyInfo) credSpec {
	return credSpec{owner: owner, key: key, status: store.CredentialEnabled, nb: -time.Hour, na: 24 * time.Hour}
}

// credential stores a credential and returns its ID.
func (e *env) credential(s credSpec) string {
	e.t.Helper()
	id, _ := store.NewID()
	c := &store.Credential{
		ID: id, Owner: s.owner, KeyID: s.key.ID, Label: "label-" + id, Algorithm: store.AlgRSA2048,
		KeyBits: 2048, Status: s.status, Description: s.desc,
	}
	if pub, ok := s.key.Public.(*ecdsa.PublicKey); ok {
		c.Algorithm, c.KeyBits = "ec-p"+strconv.Itoa(pub.Curve.Params().BitSize), pub.Curve.Params().BitSize
	}
	switch {
	case s.chain != nil:
		c.Chain = s.chain
	case s.status != store.CredentialPending:
		now := e.clock.Now()
		c.Chain = [][]byte{certFor(e.t, s.key, s.owner+" signer", now.Add(s.nb), now.Add(s.na)), caCert.Raw}
	}
	e.update(func(tx store.Tx) error { return tx.CreateCredential(c) })
	e.creds[id] = c
	return id
}

// randomValue is a fresh 256-bit bearer value.
func randomValue() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// accessToken mints a service-scope access token in the store (a fixture
// standing in for the OAuth token endpoint).
func (e *env) accessToken(user, client string) string {
	e.t.Helper()
	v := randomValue()
	e.update(func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint(v), Kind: store.TokenAccess, ClientID: client, Username: user,
			Scopes: []string{"service"}, ExpiresAt: e.clock.Now().Add(time.Hour),
		})
	})
	return v
}

// alice mints a service-scope access token of alice from rp1 and stores an
// enabled credential of hers on keyA: where most signHash tests start.
func (e *env) alice() (bearer, cred string) {
	e.t.Helper()
	return e.accessToken("alice", "rp1"), e.credential(valid("alice", keyA))
}

// sad mints a SAD for credential and digests, valid for ttl, under the
// user's secret generation (as the issuers do; none for an unknown user).
func (e *env) sad(user, client, credential string, ttl time.Duration, digests ...[]byte) string {
	e.t.Helper()
	v := randomValue()
	e.update(func(tx store.Tx) error {
		var gen uint64
		if u, err := tx.User(user); err == nil {
			gen = u.SecretGeneration
		}
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint(v), Kind: store.TokenSAD, ClientID: client, Username: user,
			Scopes: []string{"credential"}, CredentialID: credential, Hashes: digests,
			ExpiresAt: e.clock.Now().Add(ttl), SecretGeneration: gen,
		})
	})
	return v
}

// digest returns SHA-256 of s.
func digest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

func b64(d []byte) string { return base64.StdEncoding.EncodeToString(d) }

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r response) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

// call POSTs body (JSON text) to /csc/v1/<method> with the bearer (none
// when "") and Content-Type application/json.
func (e *env) call(method, bearer, body string) response {
	e.t.Helper()
	return e.do(http.MethodPost, method, body, map[string]string{"Authorization": bearerHeader(bearer), "Content-Type": "application/json"})
}

func bearerHeader(v string) string {
	if v == "" {
		return ""
	}
	return "Bearer " + v
}

// do sends any request; empty header values are left out.
func (e *env) do(httpMethod, method, body string, header map[string]string) response {
	e.t.Helper()
	req, err := http.NewRequest(httpMethod, e.srv.URL+"/csc/v1/"+method, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	// Every answer any test gets is checked against docs/openapi.yaml.
	if err := validateResponse(req, []byte(body), res, raw); err != nil {
		e.t.Errorf("%s %s: response does not match docs/openapi.yaml: %v\n%d %s", httpMethod, method, err, res.StatusCode, raw)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		e.t.Fatalf("%s %s: %d, body is not a JSON object: %q", httpMethod, method, res.StatusCode, raw)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		e.t.Errorf("%s %s: Content-Type %q", httpMethod, method, ct)
	}
	return r
}

// signHashBody builds a signHash body with signAlgo rsaEncryption and
// hashAlgo SHA-256.
func signHashBody(credential, sad string, digests ...[]byte) string {
	hs := make([]string, len(digests))
	for i, d := range digests {
		hs[i] = b64(d)
	}
	b, _ := json.Marshal(map[string]any{
		"credentialID": credential, "SAD": sad, "hash": hs,
		"hashAlgo": "2.16.840.1.101.3.4.2.1", "signAlgo": "1.2.840.113549.1.1.1",
	})
	return string(b)
}

// wantError checks an error answer.
func wantError(t *testing.T, r response, status int, code, desc string) {
	t.Helper()
	if r.status != status || r.str("error") != code || r.str("error_description") != desc {
		t.Errorf("got %d %q %q, want %d %q %q", r.status, r.str("error"), r.str("error_description"), status, code, desc)
	}
	if len(r.body) > 2 {
		t.Errorf("error body has extra members: %s", r.raw)
	}
}

// signatures returns the decoded signatures of a 200 signHash answer.
func signatures(t *testing.T, r response) [][]byte {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("signHash: %d %s", r.status, r.raw)
	}
	list, _ := r.body["signatures"].([]any)
	out := make([][]byte, len(list))
	for i, s := range list {
		str, _ := s.(string)
		sig, err := base64.StdEncoding.Strict().DecodeString(str)
		if err != nil {
			t.Fatalf("signature %d is not standard base64: %q", i, str)
		}
		out[i] = sig
	}
	return out
}

// verify checks sig over d with the leaf of credential id.
func (e *env) verify(id string, d, sig []byte) {
	e.t.Helper()
	leaf, err := x509.ParseCertificate(e.creds[id].Chain[0])
	if err != nil {
		e.t.Fatal(err)
	}
	if err := rsa.VerifyPKCS1v15(leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, d, sig); err != nil {
		e.t.Errorf("signature does not verify with the certificate of %s: %v", id, err)
	}
}

// auditEntries returns the whole audit log.
func (e *env) auditEntries() []*store.AuditEntry {
	e.t.Helper()
	var out []*store.AuditEntry
	e.view(func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(a *store.AuditEntry) error { out = append(out, a); return nil })
	})
	return out
}

// auditOutcomes counts the audit log's entries by outcome.
func (e *env) auditOutcomes() map[string]int {
	e.t.Helper()
	n := map[string]int{}
	for _, a := range e.auditEntries() {
		n[a.Outcome]++
	}
	return n
}

// auditRaw returns the stored encoding of the whole log.
func (e *env) auditRaw() []byte {
	e.t.Helper()
	var buf bytes.Buffer
	e.view(func(tx store.Tx) error {
		return tx.AuditRecords(1, func(_ uint64, raw []byte) error { buf.Write(raw); buf.WriteByte('\n'); return nil })
	})
	return buf.Bytes()
}

// sadExists reports whether the SAD is still stored.
func (e *env) sadExists(v string) bool {
	e.t.Helper()
	var ok bool
	e.view(func(tx store.Tx) error {
		_, err := tx.Token(store.Fingerprint(v))
		ok = err == nil
		return nil
	})
	return ok
}

// recordingMetrics counts what csc reports.
type recordingMetrics struct {
	mu        sync.Mutex
	signHash  map[string]int
	sad       map[string]int
	authorize map[string]int // method/result
}

func (m *recordingMetrics) ObserveSignHash(_ time.Duration, outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.signHash == nil {
		m.signHash = map[string]int{}
	}
	m.signHash[outcome]++
}

func (m *recordingMetrics) ObserveSAD(outcome, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sad == nil {
		m.sad = map[string]int{}
	}
	m.sad[outcome+"/"+reason]++
}

func (m *recordingMetrics) ObserveAuthorize(method, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.authorize == nil {
		m.authorize = map[string]int{}
	}
	m.authorize[method+"/"+result]++
}

func (m *recordingMetrics) get(kind, key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch kind {
	case "sad":
		return m.sad[key]
	case "authorize":
		return m.authorize[key]
	}
	return m.signHash[key]
}

// hexOf is lowercase hex, as audit entries hold digests.
func hexOf(d []byte) string { return hex.EncodeToString(d) }

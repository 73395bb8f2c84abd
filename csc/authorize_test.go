package csc_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
)

// lowArgon2 keeps PIN hashing cheap in tests.
var lowArgon2 = store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}

const (
	testPIN     = "24680"
	maxFailures = 3
)

// countingChecker counts the PIN evaluations of the password checker;
// during, when set, runs while a PIN is being hashed (the world changing
// between the PIN check and the SAD's write); settled, when set, runs
// once a PIN check has settled, before the SAD's transaction (pinHook).
type countingChecker struct {
	*store.Hasher
	checks  atomic.Int64
	during  func()
	settled func()
}

// pinHook is the explicit env's PIN checker: the password checker, then
// the countingChecker's settled hook.
type pinHook struct {
	*passwords.Checker
	c *countingChecker
}

func (p pinHook) CheckSigningPIN(ctx context.Context, username, pin, otp string) (passwords.PINResult, uint64, error) {
	res, gen, err := p.Checker.CheckSigningPIN(ctx, username, pin, otp)
	if p.c.settled != nil {
		p.c.settled()
	}
	return res, gen, err
}

func (c *countingChecker) Check(encoded string, secret []byte) (bool, error) {
	c.checks.Add(1)
	if c.during != nil {
		c.during()
	}
	time.Sleep(5 * time.Millisecond) // keep guesses in flight together
	return c.Hasher.Check(encoded, secret)
}

// explicitEnv is an env whose credentials/authorize checks PINs with the
// real password checker (passwords.Checker, max_failures 3) over the same
// store; alice has the signing PIN testPIN.
type explicitEnv struct {
	*env
	passwords *passwords.Checker
	checker   *countingChecker
}

func newExplicitEnv(t testing.TB) *explicitEnv {
	t.Helper()
	db := memory.New(memory.Options{})
	hasher, err := store.NewHasher(lowArgon2)
	if err != nil {
		t.Fatal(err)
	}
	checker := &countingChecker{Hasher: hasher}
	pw, err := passwords.New(passwords.Config{
		Store: oauthtest.PasswordStore(oauthtest.Store(db)), Hasher: checker, MaxFailures: maxFailures,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, db, "", func(h *csc.Handler) { h.PIN = pinHook{pw, checker}; h.SADTTL = 5 * time.Minute })
	pinHash, err := hasher.Hash([]byte(testPIN))
	if err != nil {
		t.Fatal(err)
	}
	e.update(func(tx store.Tx) error {
		for _, name := range []string{"alice", "bob"} {
			u, err := tx.User(name)
			if err != nil {
				return err
			}
			u.PINHash = pinHash
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		return nil
	})
	return &explicitEnv{env: e, passwords: pw, checker: checker}
}

// explicitCredential stores an enabled credential of owner with the given
// multisign and authMode.
func (e *explicitEnv) explicitCredential(owner string, multisign int, mode store.AuthMode) string {
	e.t.Helper()
	id := e.credential(valid(owner, keyA))
	e.update(func(tx store.Tx) error {
		c, err := tx.Credential(id)
		if err != nil {
			return err
		}
		c.Multisign, c.AuthMode = multisign, mode
		return tx.PutCredential(c)
	})
	return id
}

// authorizeBody builds a credentials/authorize body.
func authorizeBody(cred string, num any, pin string, digests ...[]byte) string {
	hs := make([]string, len(digests))
	for i, d := range digests {
		hs[i] = b64(d)
	}
	m := map[string]any{"credentialID": cred, "numSignatures": num, "hash": hs}
	if pin != "" {
		m["PIN"] = pin
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func batch(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = digest(fmt.Sprintf("document %d", i))
	}
	return out
}

// TestAuthorizeBatch: credentials/authorize with the PIN for five hashes
// (one twice), then one signHash with the same hashes in another order:
// five signatures in request order, each verified; the SAD is spent; the
// audit log has one authorize and one signHash entry, each listing every
// hash.
func TestAuthorizeBatch(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	cred := e.explicitCredential("alice", 10, store.AuthExplicit)
	ds := batch(4)
	ds = append(ds, ds[1]) // a duplicate counts twice

	r := e.call("credentials/authorize", bearer, authorizeBody(cred, 5, testPIN, ds...))
	if r.status != http.StatusOK {
		t.Fatalf("authorize: %d %s", r.status, r.raw)
	}
	sad := r.str("SAD")
	if exp, _ := r.body["expiresIn"].(float64); sad == "" || exp != 300 {
		t.Fatalf("authorize: %s", r.raw)
	}
	order := []int{4, 0, 3, 2, 1}
	req := make([][]byte, len(order))
	for i, j := range order {
		req[i] = ds[j]
	}
	sigs := signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, req...)))
	if len(sigs) != 5 {
		t.Fatalf("%d signatures, want 5", len(sigs))
	}
	for i, sig := range sigs {
		e.verify(cred, req[i], sig)
	}
	wantError(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, req...)), 400, "invalid_request", "Invalid parameter SAD")

	var kinds []string
	for _, a := range e.auditEntries() {
		if a.Outcome == store.AuditGranted {
			kinds = append(kinds, string(a.Kind))
			if len(a.Hashes) != 5 {
				t.Errorf("%s entry lists %d hashes, want 5", a.Kind, len(a.Hashes))
			}
		}
	}
	if !slices.Equal(kinds, []string{"authorize", "signHash"}) {
		t.Errorf("granted audit entries %v", kinds)
	}
}

// TestAuthorizeDigestSizes: credentials/authorize and extendTransaction
// take SHA-384 and SHA-512 digests as the OAuth credential flow does; the
// SAD signs them with the signature algorithm of their hash, and the
// signature verifies.
func TestAuthorizeDigestSizes(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	cred := e.explicitCredential("alice", 2, store.AuthExplicit)
	for _, tc := range []struct {
		hash     crypto.Hash
		signAlgo string
	}{
		{crypto.SHA384, "1.2.840.113549.1.1.12"}, {crypto.SHA512, "1.2.840.113549.1.1.13"},
	} {
		t.Run(tc.hash.String(), func(t *testing.T) {
			h := tc.hash.New()
			h.Write([]byte("%PDF-1.7 signed with " + tc.hash.String()))
			d := h.Sum(nil)
			r := e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, d))
			if r.status != http.StatusOK || r.str("SAD") == "" {
				t.Fatalf("authorize with a %d-byte digest: %d %s", len(d), r.status, r.raw)
			}
			e.clock.Advance(time.Minute) // an extension must give a later expiry
			ext, _ := json.Marshal(map[string]any{"credentialID": cred, "SAD": r.str("SAD"), "hash": []string{b64(d)}})
			r = e.call("credentials/extendTransaction", bearer, string(ext))
			if r.status != http.StatusOK || r.str("SAD") == "" {
				t.Fatalf("extendTransaction with a %d-byte digest: %d %s", len(d), r.status, r.raw)
			}
			body, _ := json.Marshal(map[string]any{"credentialID": cred, "SAD": r.str("SAD"), "hash": []string{b64(d)}, "signAlgo": tc.signAlgo})
			sigs := signatures(t, e.call("signatures/signHash", bearer, string(body)))
			leaf, err := x509.ParseCertificate(e.creds[cred].Chain[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := rsa.VerifyPKCS1v15(leaf.PublicKey.(*rsa.PublicKey), tc.hash, d, sigs[0]); err != nil {
				t.Errorf("crypto/rsa: %v", err)
			}
		})
	}
}

// TestAuthorizeRefusals: one case per rule of credentials/authorize.
func TestAuthorizeRefusals(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	explicit := e.explicitCredential("alice", 3, store.AuthExplicit)
	oauth2code := e.explicitCredential("alice", 3, store.AuthOAuth2Code)
	bobs := e.explicitCredential("bob", 3, store.AuthExplicit)
	disabled := e.explicitCredential("alice", 3, store.AuthExplicit)
	e.update(func(tx store.Tx) error {
		c, _ := tx.Credential(disabled)
		c.Status = store.CredentialDisabled
		return tx.PutCredential(c)
	})
	ds := batch(4)
	for _, tc := range []struct {
		name, body, code, desc string
	}{
		{"oauth2code credential", authorizeBody(oauth2code, 1, testPIN, ds[0]), "invalid_request", "The credential's authMode is oauth2code: obtain the SAD with the OAuth 2.0 scope credential"},
		{"numSignatures over multisign", authorizeBody(explicit, 4, testPIN, ds...), "invalid_request", "Numbers of signatures is too high"},
		{"numSignatures over the request cap", authorizeBody(explicit, 101, testPIN, ds[0]), "invalid_request", "Numbers of signatures is too high"},
		{"more hashes than numSignatures", authorizeBody(explicit, 2, testPIN, ds[:3]...), "invalid_request", "The number of hashes must equal numSignatures"},
		{"fewer hashes than numSignatures", authorizeBody(explicit, 3, testPIN, ds[:2]...), "invalid_request", "The number of hashes must equal numSignatures"},
		{"numSignatures 0", authorizeBody(explicit, 0, testPIN, ds[0]), "invalid_request", "Invalid value for parameter numSignatures"},
		{"numSignatures negative", authorizeBody(explicit, -1, testPIN, ds[0]), "invalid_request", "Invalid value for parameter numSignatures"},
		{"numSignatures missing", `{"credentialID":"` + explicit + `","hash":["` + b64(ds[0]) + `"],"PIN":"1"}`, "invalid_request", "Missing (or invalid type) integer parameter numSignatures"},
		{"numSignatures a boolean", authorizeBody(explicit, true, testPIN, ds[0]), "invalid_request", "Missing (or invalid type) integer parameter numSignatures"},
		{"hash missing", `{"credentialID":"` + explicit + `","numSignatures":1,"PIN":"1"}`, "invalid_request", "Missing (or invalid type) array parameter hash"},
		{"hash empty", authorizeBody(explicit, 1, testPIN), "invalid_request", "Empty hash array"},
		{"hash not base64", `{"credentialID":"` + explicit + `","numSignatures":1,"hash":["%%%"],"PIN":"1"}`, "invalid_request", "Invalid Base64 hash string parameter"},
		{"hash of 31 bytes", authorizeBody(explicit, 1, testPIN, ds[0][:31]), "invalid_request", "Invalid digest value length"},
		{"hash of 20 bytes (SHA-1)", authorizeBody(explicit, 1, testPIN, ds[0][:20]), "invalid_request", "Invalid digest value length"},
		{"hash of 49 bytes", authorizeBody(explicit, 1, testPIN, append(slices.Clone(ds[0]), ds[1][:17]...)), "invalid_request", "Invalid digest value length"},
		{"hash array over the cap", authorizeBody(explicit, 1, testPIN, slices.Repeat([][]byte{ds[0]}, 101)...), "invalid_request", "Too many hashes: at most 100 per request"},
		{"credentialID missing", `{"numSignatures":1,"hash":["` + b64(ds[0]) + `"],"PIN":"1"}`, "invalid_request", "Missing (or invalid type) string parameter credentialID"},
		{"unknown credential", authorizeBody("nope", 1, testPIN, ds[0]), "invalid_request", "Invalid parameter credentialID"},
		{"credential of another user", authorizeBody(bobs, 1, testPIN, ds[0]), "invalid_request", "Invalid parameter credentialID"},
		{"disabled credential", authorizeBody(disabled, 1, testPIN, ds[0]), "invalid_request", "The credential identified by credentialID is disabled"},
		{"PIN missing", authorizeBody(explicit, 1, "", ds[0]), "invalid_request", "Missing (or invalid type) string parameter PIN"},
		{"PIN oversized", authorizeBody(explicit, 1, strings.Repeat("1", 257), ds[0]), "invalid_request", "Invalid parameter PIN"},
		{"PIN a number", `{"credentialID":"` + explicit + `","numSignatures":1,"hash":["` + b64(ds[0]) + `"],"PIN":24680}`, "invalid_request", "Missing (or invalid type) string parameter PIN"},
		{"description oversized", strings.TrimSuffix(authorizeBody(explicit, 1, testPIN, ds[0]), "}") + `,"description":"` + strings.Repeat("d", 501) + `"}`, "invalid_request", "Invalid parameter description"},
		{"duplicated member", strings.TrimSuffix(authorizeBody(explicit, 1, testPIN, ds[0]), "}") + `,"numSignatures":3}`, "invalid_request", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("credentials/authorize", bearer, tc.body)
			if tc.desc == "" {
				if r.status != 400 || r.str("error") != tc.code {
					t.Errorf("got %d %s", r.status, r.raw)
				}
				return
			}
			wantError(t, r, 400, tc.code, tc.desc)
		})
	}
	if n := e.checker.checks.Load(); n != 0 {
		t.Errorf("%d PIN evaluations for refused requests, want 0", n)
	}
	// No bearer: 401.
	if r := e.call("credentials/authorize", "", authorizeBody(explicit, 1, testPIN, ds[0])); r.status != http.StatusUnauthorized {
		t.Errorf("without a bearer: %d %s", r.status, r.raw)
	}
	// A wrong PIN is invalid_pin and counts.
	wantError(t, e.call("credentials/authorize", bearer, authorizeBody(explicit, 1, "13579", ds[0])), 400, "invalid_pin", "The PIN is invalid")
	e.view(func(tx store.Tx) error {
		u, _ := tx.User("alice")
		if u.FailedPINs != 1 {
			t.Errorf("FailedPINs %d after one wrong PIN, want 1", u.FailedPINs)
		}
		return nil
	})
}

// TestAuthorizedSADBinding: a SAD from credentials/authorize is bound to
// its credential, hashes, user and client; any other use is refused and
// burns it.
func TestAuthorizedSADBinding(t *testing.T) {
	e := newExplicitEnv(t)
	alice := e.accessToken("alice", "rp1")
	aliceOtherClient := e.accessToken("alice", "rp2")
	bob := e.accessToken("bob", "rp1")
	cred := e.explicitCredential("alice", 3, store.AuthExplicit)
	other := e.explicitCredential("alice", 3, store.AuthExplicit)
	ds := batch(4)
	for _, tc := range []struct {
		name   string
		bearer string
		body   func(sad string) string
		desc   string
	}{
		{"other hashes", alice, func(sad string) string { return signHashBody(cred, sad, ds[1:4]...) }, "Hash is not authorized by the SAD."},
		{"one hash short", alice, func(sad string) string { return signHashBody(cred, sad, ds[:2]...) }, "Hash is not authorized by the SAD."},
		{"a duplicate instead of a hash", alice, func(sad string) string { return signHashBody(cred, sad, ds[0], ds[1], ds[1]) }, "Hash is not authorized by the SAD."},
		{"other credential", alice, func(sad string) string { return signHashBody(other, sad, ds[:3]...) }, "Invalid parameter SAD"},
		{"other client", aliceOtherClient, func(sad string) string { return signHashBody(cred, sad, ds[:3]...) }, "Invalid parameter SAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("credentials/authorize", alice, authorizeBody(cred, 3, testPIN, ds[:3]...))
			sad := r.str("SAD")
			if sad == "" {
				t.Fatalf("authorize: %d %s", r.status, r.raw)
			}
			wantError(t, e.call("signatures/signHash", tc.bearer, tc.body(sad)), 400, "invalid_request", tc.desc)
			if e.sadExists(sad) {
				t.Error("the SAD survived a refused use")
			}
		})
	}
	// Another user cannot even see the credential.
	r := e.call("credentials/authorize", alice, authorizeBody(cred, 3, testPIN, ds[:3]...))
	wantError(t, e.call("signatures/signHash", bob, signHashBody(cred, r.str("SAD"), ds[:3]...)), 400, "invalid_request", "Invalid parameter credentialID")
}

// TestAuthorizePINFlood: many wrong PINs at once, through
// credentials/authorize: exactly max_failures are evaluated, the PIN is
// locked, and the right PIN is refused afterwards without evaluation.
func TestAuthorizePINFlood(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	cred := e.explicitCredential("alice", 1, store.AuthExplicit)
	body := authorizeBody(cred, 1, "99999", digest("x"))
	const n = 24
	codes := make([]string, n)
	storetest.AtOnce(n, func(i int) {
		codes[i] = e.call("credentials/authorize", bearer, body).str("error_description")
	})
	if got := e.checker.checks.Load(); got != maxFailures {
		t.Errorf("%d PIN evaluations, want exactly %d", got, maxFailures)
	}
	counts := map[string]int{}
	for _, c := range codes {
		counts[c]++
	}
	if counts["PIN locked"]+counts["The PIN is invalid"] != n || counts["The PIN is invalid"] > maxFailures {
		t.Errorf("answers %v", counts)
	}
	e.view(func(tx store.Tx) error {
		u, _ := tx.User("alice")
		if !u.PINLocked || u.FailedPINs != maxFailures {
			t.Errorf("after the flood: PINLocked %v, FailedPINs %d", u.PINLocked, u.FailedPINs)
		}
		return nil
	})
	before := e.checker.checks.Load()
	wantError(t, e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, digest("x"))), 400, "invalid_request", "PIN locked")
	if e.checker.checks.Load() != before {
		t.Error("the right PIN was evaluated while locked")
	}
}

// TestAuthorizeTOTP: a user with TOTP gives PIN and OTP; a wrong code with
// the right PIN is one failure, like a wrong PIN; a code is accepted once.
func TestAuthorizeTOTP(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	cred := e.explicitCredential("alice", 1, store.AuthExplicit)
	const secret = "JBSWY3DPEHPK3PXP"
	e.update(func(tx store.Tx) error {
		u, _ := tx.User("alice")
		u.TOTPSecret = secret
		return tx.PutUser(u)
	})
	code, err := totp.GenerateCode(secret, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	with := func(otp string) string {
		return strings.TrimSuffix(authorizeBody(cred, 1, testPIN, digest("x")), "}") + `,"OTP":"` + otp + `"}`
	}
	wantError(t, e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, digest("x"))), 400, "invalid_request", "Missing (or invalid type) string parameter OTP")
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	wantError(t, e.call("credentials/authorize", bearer, with(wrong)), 400, "invalid_pin", "The PIN or the OTP is invalid")
	e.view(func(tx store.Tx) error {
		if u, _ := tx.User("alice"); u.FailedPINs != 1 {
			t.Errorf("FailedPINs %d after a wrong OTP, want 1", u.FailedPINs)
		}
		return nil
	})
	if r := e.call("credentials/authorize", bearer, with(code)); r.status != http.StatusOK || r.str("SAD") == "" {
		t.Fatalf("right PIN and OTP: %d %s", r.status, r.raw)
	}
	// The same code again is a replay: refused, and counted.
	wantError(t, e.call("credentials/authorize", bearer, with(code)), 400, "invalid_pin", "The PIN or the OTP is invalid")
	// credentials/info with authInfo tells the client what to ask for.
	r := e.call("credentials/info", bearer, `{"credentialID":"`+cred+`","authInfo":true}`)
	if r.str("authMode") != "explicit" || r.body["PIN"] == nil || r.body["OTP"] == nil {
		t.Errorf("credentials/info: %s", r.raw)
	}
}

// TestExtendTransaction: an unexpired SAD of a multisign credential is
// traded for a new one with the same binding; the old one is gone; the
// extensions stop at maxSADExtensions lifetimes; a multisign 1 credential
// and a SAD for other hashes are refused.
func TestExtendTransaction(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	e.update(func(tx store.Tx) error { // the bearer outlives the test's clock jumps
		tok, err := tx.Token(store.Fingerprint(bearer))
		if err != nil {
			return err
		}
		if err := tx.DeleteToken(tok.Hash); err != nil {
			return err
		}
		tok.ExpiresAt = e.clock.Now().Add(24 * time.Hour)
		return tx.CreateToken(tok)
	})
	cred := e.explicitCredential("alice", 3, store.AuthExplicit)
	single := e.explicitCredential("alice", 1, store.AuthExplicit)
	ds := batch(3)
	extendBody := func(cred, sad string, digests ...[]byte) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(signHashBody(cred, sad, digests...)), &m)
		delete(m, "hashAlgo")
		delete(m, "signAlgo")
		b, _ := json.Marshal(m)
		return string(b)
	}
	sad := e.call("credentials/authorize", bearer, authorizeBody(cred, 3, testPIN, ds...)).str("SAD")
	// 4 minutes a step: 14 extensions reach 56 minutes after authorizing;
	// the 14th is capped at 60 minutes (12 × 5), so the next is refused
	// and leaves the SAD usable.
	for i := range 14 {
		e.clock.Advance(4 * time.Minute)
		r := e.call("credentials/extendTransaction", bearer, extendBody(cred, sad, ds[2], ds[0], ds[1]))
		if r.status != http.StatusOK {
			t.Fatalf("extension %d: %d %s", i+1, r.status, r.raw)
		}
		if e.sadExists(sad) {
			t.Fatal("the old SAD survived its extension")
		}
		sad = r.str("SAD")
	}
	e.clock.Advance(2 * time.Minute)
	wantError(t, e.call("credentials/extendTransaction", bearer, extendBody(cred, sad, ds...)), 400, "invalid_request", "The SAD cannot be extended any further: authorize again")
	// The last SAD still signs.
	for i, sig := range signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, ds...))) {
		e.verify(cred, ds[i], sig)
	}

	sad = e.call("credentials/authorize", bearer, authorizeBody(cred, 3, testPIN, ds...)).str("SAD")
	wantError(t, e.call("credentials/extendTransaction", bearer, extendBody(cred, sad, ds[0], ds[0], ds[1])), 400, "invalid_request", "Hash is not authorized by the SAD.")
	if e.sadExists(sad) {
		t.Error("a SAD presented for other hashes survived")
	}
	sad = e.call("credentials/authorize", bearer, authorizeBody(cred, 3, testPIN, ds...)).str("SAD")
	e.clock.Advance(6 * time.Minute)
	wantError(t, e.call("credentials/extendTransaction", bearer, extendBody(cred, sad, ds...)), 400, "invalid_request", "SAD expired")

	sad = e.call("credentials/authorize", bearer, authorizeBody(single, 1, testPIN, ds[0])).str("SAD")
	wantError(t, e.call("credentials/extendTransaction", bearer, extendBody(single, sad, ds[0])), 400, "invalid_request", "The credential's multisign is 1: its SAD cannot be extended")
	if !e.sadExists(sad) {
		t.Error("a refused extension of a multisign 1 credential burned its SAD")
	}
	wantError(t, e.call("credentials/extendTransaction", bearer, `{"credentialID":"`+cred+`","hash":["`+b64(ds[0])+`"]}`), 400, "invalid_request", "Missing (or invalid type) string parameter SAD")
	wantError(t, e.call("credentials/extendTransaction", bearer, `{"credentialID":"`+cred+`","SAD":"x"}`), 400, "invalid_request", "Missing (or invalid type) array parameter hash")
	wantError(t, e.call("credentials/extendTransaction", bearer, `{"credentialID":"`+cred+`","SAD":"x","hash":["`+b64(ds[0][:31])+`"]}`), 400, "invalid_request", "Invalid digest value length")
}

// TestAuthorizeMetrics: every credentials/authorize and extendTransaction
// request is counted once by its result.
func TestAuthorizeMetrics(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	cred := e.explicitCredential("alice", 3, store.AuthExplicit)
	ds := batch(2)
	extend := func(sad string, digests ...[]byte) response {
		hs := make([]string, len(digests))
		for i, d := range digests {
			hs[i] = b64(d)
		}
		return e.call("credentials/extendTransaction", bearer, body("credentialID", cred, "SAD", sad, "hash", hs))
	}
	sad := e.call("credentials/authorize", bearer, authorizeBody(cred, 2, testPIN, ds...)).str("SAD")
	if sad == "" {
		t.Fatal("no SAD")
	}
	e.clock.Advance(time.Minute)
	sad = extend(sad, ds...).str("SAD")
	if sad == "" {
		t.Fatal("no extended SAD")
	}
	wantError(t, extend("no such SAD", ds...), 400, "invalid_request", "Invalid parameter SAD")
	wantError(t, extend(sad, ds[0]), 400, "invalid_request", "Hash is not authorized by the SAD.")
	wantError(t, e.call("credentials/authorize", bearer, authorizeBody(cred, 4, testPIN, batch(4)...)), 400, "invalid_request", "Numbers of signatures is too high")
	wantError(t, e.call("credentials/authorize", bearer, "{"), 400, "invalid_request", "Malformed JSON body")
	for range maxFailures - 1 {
		wantError(t, e.call("credentials/authorize", bearer, authorizeBody(cred, 1, "13579", ds[0])), 400, "invalid_pin", "The PIN is invalid")
	}
	r := e.call("credentials/authorize", bearer, authorizeBody(cred, 1, "13579", ds[0])) // the last failure locks
	if r.status != 400 {
		t.Fatalf("third wrong PIN: %d %s", r.status, r.raw)
	}
	last := "locked"
	if r.str("error") == "invalid_pin" {
		last = "wrong_pin"
	}
	wantError(t, e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, ds[0])), 400, "invalid_request", "PIN locked")
	want := map[string]int{
		"authorize/granted": 1, "authorize/refused": 2, "authorize/wrong_pin": maxFailures - 1, "authorize/locked": 1,
		"extendTransaction/granted": 1, "extendTransaction/refused": 2,
	}
	want["authorize/"+last]++
	for k, n := range want {
		if got := e.metrics.get("authorize", k); got != n {
			t.Errorf("%s counted %d, want %d", k, got, n)
		}
	}
	if got := e.metrics.get("authorize", "authorize/error") + e.metrics.get("authorize", "extendTransaction/error"); got != 0 {
		t.Errorf("%d errors counted", got)
	}

	// A store that cannot write the audit entry: the server's failure,
	// not the client's.
	e.h.Store = brokenBatch{cscStore(e.db)}
	wantError(t, e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, ds[0])), http.StatusInternalServerError, "server_error", "Internal error")
	wantError(t, extend("no such SAD", ds...), http.StatusInternalServerError, "server_error", "Internal error")
	if a, x := e.metrics.get("authorize", "authorize/error"), e.metrics.get("authorize", "extendTransaction/error"); a != 1 || x != 1 {
		t.Errorf("errors counted: authorize %d, extendTransaction %d; want 1 each", a, x)
	}
}

// TestSendOTPAndInfo: sendOTP answers the CSC error (no online OTP);
// info lists credentials/authorize only when PINs can be checked.
func TestSendOTPAndInfo(t *testing.T) {
	e := newExplicitEnv(t)
	bearer := e.accessToken("alice", "rp1")
	cred := e.explicitCredential("alice", 1, store.AuthExplicit)
	bobs := e.explicitCredential("bob", 1, store.AuthExplicit)
	wantError(t, e.call("credentials/sendOTP", bearer, `{"credentialID":"`+cred+`"}`), 400, "invalid_request", "The credential has no online OTP: use the code of the authenticator app")
	wantError(t, e.call("credentials/sendOTP", bearer, `{"credentialID":"`+bobs+`"}`), 400, "invalid_request", "Invalid parameter credentialID")
	wantError(t, e.call("credentials/sendOTP", bearer, `{}`), 400, "invalid_request", "Missing (or invalid type) string parameter credentialID")

	methods := func(e *env) []string {
		var out []string
		for _, m := range e.call("info", "", "{}").body["methods"].([]any) {
			out = append(out, m.(string))
		}
		return out
	}
	if got := methods(e.env); !slices.Contains(got, "credentials/authorize") {
		t.Errorf("info methods %v lack credentials/authorize", got)
	}
	plain := newEnv(t)
	if got := methods(plain); slices.Contains(got, "credentials/authorize") {
		t.Errorf("info methods %v list credentials/authorize without a PIN checker", got)
	}
	wantError(t, plain.call("credentials/authorize", "", "{}"), 501, "not_implemented", "Method credentials/authorize is not implemented by this service (see info methods)")
}

// FuzzExplicitRequest sends any body to credentials/authorize,
// extendTransaction and sendOTP with alice's Bearer: the answer is 200
// (a SAD) or a 400 with a printable description, never another status,
// and always matches docs/openapi.yaml; a SAD is only ever issued for
// alice's explicit credential.
func FuzzExplicitRequest(f *testing.F) {
	e := newExplicitEnv(f)
	bearer := e.accessToken("alice", "rp1")
	e.update(func(tx store.Tx) error { // the bearer stays valid however long the fuzzing runs
		tok, _ := tx.Token(store.Fingerprint(bearer))
		_ = tx.DeleteToken(tok.Hash)
		tok.ExpiresAt = e.clock.Now().Add(1000 * time.Hour)
		return tx.CreateToken(tok)
	})
	cred := e.explicitCredential("alice", 3, store.AuthExplicit)
	h := b64(digest("fuzz"))
	methods := []string{"credentials/authorize", "credentials/extendTransaction", "credentials/sendOTP"}
	for _, s := range []struct {
		m    uint8
		body string
	}{
		{0, authorizeBody(cred, 1, testPIN, digest("fuzz"))},
		{0, authorizeBody(cred, "2", testPIN, digest("a"), digest("b"))},
		{0, `{"credentialID":"` + cred + `","numSignatures":1e3,"hash":["` + h + `"],"PIN":"1"}`},
		{0, `{"credentialID":"` + cred + `","numSignatures":99999999999,"hash":["` + h + `"],"PIN":"1"}`},
		{1, `{"credentialID":"` + cred + `","SAD":"x","hash":["` + h + `"]}`},
		{2, `{"credentialID":"` + cred + `"}`},
		{2, `{"credentialID":null}`},
	} {
		f.Add(s.m, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, m uint8, body []byte) {
		method := methods[int(m)%len(methods)]
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/csc/v1/"+method, strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var raw []byte
		raw, _ = io.ReadAll(res.Body)
		if err := validateResponse(req, body, res, raw); err != nil {
			t.Fatalf("%s %q: response does not match docs/openapi.yaml: %v\n%d %s", method, body, err, res.StatusCode, raw)
		}
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %q: %d %q", method, body, res.StatusCode, raw)
		}
		switch res.StatusCode {
		case http.StatusOK:
			var req map[string]any
			_ = json.Unmarshal(body, &req)
			if req["credentialID"] != cred || out["SAD"] == "" {
				t.Fatalf("%s %q: %s", method, body, raw)
			}
		case http.StatusBadRequest:
			desc, _ := out["error_description"].(string)
			if (out["error"] != "invalid_request" && out["error"] != "invalid_pin") || !printableDesc(desc) {
				t.Fatalf("%s %q: 400 %s", method, body, raw)
			}
		default:
			t.Fatalf("%s %q: status %d %s", method, body, res.StatusCode, raw)
		}
	})
}

// TestAuthorizeRecheckedAfterPIN: what changes while the PIN is hashed —
// the PIN locked by an admin, the client removed, the credential disabled
// — is seen where the SAD would be written: no SAD, the refusal answered
// and audited with its reason.
func TestAuthorizeRecheckedAfterPIN(t *testing.T) {
	for _, tt := range []struct {
		name, desc, reason string
		change             func(tx store.Tx, cred string) error
	}{
		{"PIN locked", "PIN locked", "PIN locked meanwhile", func(tx store.Tx, _ string) error {
			return storetest.EditUser(tx, "alice", func(u *store.User) { u.PINLocked = true })
		}},
		{"client removed", "Invalid parameter credentialID", "client removed", func(tx store.Tx, _ string) error {
			return tx.DeleteClient("rp1")
		}},
		{"credential disabled", "The credential identified by credentialID is disabled", "", func(tx store.Tx, cred string) error {
			c, err := tx.Credential(cred)
			if err != nil {
				return err
			}
			c.Status = store.CredentialDisabled
			return tx.PutCredential(c)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newExplicitEnv(t)
			bearer := e.accessToken("alice", "rp1")
			cred := e.explicitCredential("alice", 1, store.AuthExplicit)
			var once sync.Once
			e.checker.during = func() {
				once.Do(func() { e.update(func(tx store.Tx) error { return tt.change(tx, cred) }) })
			}
			r := e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, batch(1)...))
			wantError(t, r, http.StatusBadRequest, "invalid_request", tt.desc)
			if r.str("SAD") != "" {
				t.Errorf("a SAD was issued: %s", r.raw)
			}
			entries := e.auditEntries()
			last := entries[len(entries)-1]
			if last.Kind != store.AuditAuthorize || last.Outcome != store.AuditRefused || tt.reason != "" && last.Reason != tt.reason {
				t.Errorf("last audit entry %+v, want a refused authorize (%q)", last, tt.reason)
			}
		})
	}
}

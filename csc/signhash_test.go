package csc_test

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/hsm"
	softhsmtest "github.com/signd/signd/softhsm-test"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

func TestSignHash(t *testing.T) {
	e := newEnv(t)
	bearer, cred := e.alice()
	d := digest("contract.pdf")

	cases := []struct {
		name string
		body func(sad string) string
	}{
		{"rsaEncryption with hashAlgo", func(sad string) string { return signHashBody(cred, sad, d) }},
		{"sha256WithRSA without hashAlgo (pyHanko's default)", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", sha256R)
		}},
		{"sha256WithRSA with hashAlgo, NULL params and clientData", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", sha256R,
				"hashAlgo", sha256O, "signAlgoParams", "BQA=", "clientData", "pyHanko")
		}},
		{"credentialIDs as the table names it", func(sad string) string {
			return body("credentialIDs", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", rsaEnc, "hashAlgo", sha256O)
		}},
		{"credentialIDs array of one, with an equal credentialID", func(sad string) string {
			return body("credentialID", cred, "credentialIDs", []string{cred}, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", rsaEnc, "hashAlgo", sha256O)
		}},
		{"unpadded base64 hash", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{strings.TrimRight(b64(d), "=")}, "signAlgo", rsaEnc, "hashAlgo", sha256O)
		}},
	}
	var first []byte
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			sigs := signatures(t, e.call("signatures/signHash", bearer, tc.body(sad)))
			if len(sigs) != 1 {
				t.Fatalf("%d signatures", len(sigs))
			}
			e.verify(cred, d, sigs[0])
			// PKCS#1 v1.5 is deterministic: every variant signs the same.
			if first == nil {
				first = sigs[0]
			} else if !bytes.Equal(first, sigs[0]) {
				t.Error("signature differs from the first variant's")
			}
			if e.sadExists(sad) {
				t.Error("SAD still stored after signing")
			}
		})
	}

	t.Run("several hashes, in input order", func(t *testing.T) {
		ds := [][]byte{digest("one"), digest("two"), digest("three")}
		sad := e.sad("alice", "rp1", cred, 5*time.Minute, ds[2], ds[0], ds[1]) // order-independent
		sigs := signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, ds...)))
		if len(sigs) != len(ds) {
			t.Fatalf("%d signatures for %d hashes", len(sigs), len(ds))
		}
		for i := range ds {
			e.verify(cred, ds[i], sigs[i])
		}
	})

	t.Run("openssl verifies", func(t *testing.T) {
		sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
		sig := signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)))[0]
		softhsmtest.VerifyWithOpenSSL(t, e.creds[cred].Chain[0], d, sig)
	})

	// The audit log has one granted entry per signature and no secret.
	entries := e.auditEntries()
	granted := 0
	for _, a := range entries {
		if a.Kind == store.AuditSignHash && a.Outcome == store.AuditGranted && a.User == "alice" && a.Client == "rp1" && a.Credential == cred {
			granted++
		}
	}
	if granted != len(cases)+2 {
		t.Errorf("%d granted entries, want %d", granted, len(cases)+2)
	}
	if bytes.Contains(e.auditRaw(), []byte(bearer)) {
		t.Error("the audit log contains the access token")
	}
	if n := e.metrics.get("sad", "consumed/"); n != len(cases)+2 {
		t.Errorf("metrics: %d SAD consumed", n)
	}
}

func TestSADUsedTwice(t *testing.T) {
	e := newEnv(t)
	bearer, cred := e.alice()
	d := digest("twice")
	sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
	signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)))
	wantError(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)), http.StatusBadRequest, "invalid_request", "Invalid parameter SAD")
}

func TestSADTenParallelUses(t *testing.T) {
	e := newEnv(t)
	bearer, cred := e.alice()
	const n = 10
	e.raceSAD(t, n, bearer, cred, "parallel")
	outcomes := e.auditOutcomes()
	granted, refused := outcomes[store.AuditGranted], outcomes[store.AuditRefused]
	if granted != 1 || refused != n-1 {
		t.Errorf("audit: %d granted, %d refused; want 1 and %d", granted, refused, n-1)
	}
}

// TestSADBinding: a SAD signs only for its user, its client, its
// credential and exactly its hashes, until it expires; whatever refuses it
// after it was found also consumes it.
func TestSADBinding(t *testing.T) {
	e := newEnv(t)
	alice := e.accessToken("alice", "rp1")
	aliceRP2 := e.accessToken("alice", "rp2")
	bob := e.accessToken("bob", "rp1")
	cred := e.credential(valid("alice", keyA))
	other := e.credential(valid("alice", keyB))
	bobs := e.credential(valid("bob", keyB))
	d, d2 := digest("bound"), digest("other")

	const bad = http.StatusBadRequest
	cases := []struct {
		name     string
		sadOwner string // user/client the SAD was issued to
		sadCred  string
		sadHash  [][]byte
		bearer   string
		cred     string
		hashes   [][]byte
		ttl      time.Duration
		travel   time.Duration
		desc     string
		burned   bool
	}{
		{"another hash", "alice/rp1", cred, [][]byte{d}, alice, cred, [][]byte{d2}, time.Minute, 0, "Hash is not authorized by the SAD.", true},
		{"an extra hash", "alice/rp1", cred, [][]byte{d}, alice, cred, [][]byte{d, d2}, time.Minute, 0, "Hash is not authorized by the SAD.", true},
		{"the hash twice", "alice/rp1", cred, [][]byte{d}, alice, cred, [][]byte{d, d}, time.Minute, 0, "Hash is not authorized by the SAD.", true},
		{"a missing hash", "alice/rp1", cred, [][]byte{d, d2}, alice, cred, [][]byte{d}, time.Minute, 0, "Hash is not authorized by the SAD.", true},
		{"another credential of the same user", "alice/rp1", cred, [][]byte{d}, alice, other, [][]byte{d}, time.Minute, 0, "Invalid parameter SAD", true},
		{"another user's bearer, own credential", "alice/rp1", cred, [][]byte{d}, bob, bobs, [][]byte{d}, time.Minute, 0, "Invalid parameter SAD", true},
		{"another user's bearer, the SAD's credential", "alice/rp1", cred, [][]byte{d}, bob, cred, [][]byte{d}, time.Minute, 0, "Invalid parameter credentialID", false},
		{"another client", "alice/rp1", cred, [][]byte{d}, aliceRP2, cred, [][]byte{d}, time.Minute, 0, "Invalid parameter SAD", true},
		{"expired", "alice/rp1", cred, [][]byte{d}, alice, cred, [][]byte{d}, time.Minute, time.Minute, "SAD expired", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer e.clock.Set(e.clock.Now())
			user, client, _ := strings.Cut(tc.sadOwner, "/")
			sad := e.sad(user, client, tc.sadCred, tc.ttl, tc.sadHash...)
			e.clock.Advance(tc.travel)
			wantError(t, e.call("signatures/signHash", tc.bearer, signHashBody(tc.cred, sad, tc.hashes...)), bad, "invalid_request", tc.desc)
			if e.sadExists(sad) == tc.burned {
				t.Errorf("SAD stored after refusal: %v, want %v", e.sadExists(sad), !tc.burned)
			}
		})
	}

	t.Run("a refused SAD stays refused", func(t *testing.T) {
		sad := e.sad("alice", "rp1", cred, time.Minute, d)
		wantError(t, e.call("signatures/signHash", alice, signHashBody(cred, sad, d2)), bad, "invalid_request", "Hash is not authorized by the SAD.")
		wantError(t, e.call("signatures/signHash", alice, signHashBody(cred, sad, d)), bad, "invalid_request", "Invalid parameter SAD")
	})
	t.Run("a refusal before the SAD is looked at keeps it", func(t *testing.T) {
		sad := e.sad("alice", "rp1", cred, time.Minute, d)
		wantError(t, e.call("signatures/signHash", alice, body("credentialID", cred, "SAD", sad, "hash", []string{b64(d[:31])}, "signAlgo", rsaEnc, "hashAlgo", sha256O)),
			bad, "invalid_request", "Invalid digest value length")
		signatures(t, e.call("signatures/signHash", alice, signHashBody(cred, sad, d)))
	})
	t.Run("service token as SAD is refused and survives", func(t *testing.T) {
		wantError(t, e.call("signatures/signHash", alice, signHashBody(cred, alice, d)), bad, "invalid_request", "Invalid parameter SAD")
		r := e.call("credentials/list", alice, "{}")
		if r.status != http.StatusOK {
			t.Errorf("the access token stopped working: %d %s", r.status, r.raw)
		}
	})
	t.Run("SAD as bearer", func(t *testing.T) {
		sad := e.sad("alice", "rp1", cred, time.Minute, d)
		wantError(t, e.call("signatures/signHash", sad, signHashBody(cred, sad, d)), http.StatusUnauthorized, "invalid_token", "The access token is invalid or revoked")
		if !e.sadExists(sad) {
			t.Error("a SAD presented as a bearer was consumed")
		}
	})

	// Every attempt made with a valid bearer is on record, with its reason.
	reasons := map[string]int{}
	for _, a := range e.auditEntries() {
		if a.Outcome == store.AuditRefused {
			reasons[a.Reason]++
		}
	}
	for _, r := range []string{"hashes differ from the SAD's (burned)", "SAD for another credential (burned)",
		"SAD of another user (burned)", "SAD of another client (burned)", "SAD expired (burned)",
		"credential of another user", "access token presented as SAD", "unknown SAD", "Invalid digest value length"} {
		if reasons[r] == 0 {
			t.Errorf("no refusal with reason %q in the audit log (have %v)", r, reasons)
		}
	}
	for _, reason := range []string{"hash", "user", "client", "credential", "expired", "unknown"} {
		if e.metrics.get("sad", "refused/"+reason) == 0 {
			t.Errorf("metrics: no SAD refused for %s", reason)
		}
	}
}

// faultySigner passes CheckKey and fails every signature with err.
type faultySigner struct{ err error }

func (f faultySigner) SignDigests(context.Context, []byte, crypto.SignerOpts, [][]byte) ([][]byte, error) {
	return nil, f.err
}

func (f faultySigner) CheckKey(context.Context, []byte) error { return nil }

func TestSignerFailures(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		code   string
		desc   string
		reason string
	}{
		{"busy", fmt.Errorf("%w: no session free after 2s", hsm.ErrBusy), http.StatusServiceUnavailable, "temporarily_unavailable",
			"The signing service is temporarily unavailable, try again later", "signing device busy or unavailable"},
		{"reconnecting", fmt.Errorf("hsm: sign: %w", hsm.ErrTokenUnavailable), http.StatusServiceUnavailable, "temporarily_unavailable",
			"The signing service is temporarily unavailable, try again later", "signing device busy or unavailable"},
		{"broken", errors.New("C_Sign: CKR_FUNCTION_FAILED (0x6) secret internal detail"), http.StatusInternalServerError, "server_error",
			"Internal error", "signing failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withSigner(faultySigner{tc.err}))
			bearer, cred := e.alice()
			d := digest(tc.name)
			sad := e.sad("alice", "rp1", cred, time.Minute, d)
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			wantError(t, r, tc.status, tc.code, tc.desc)
			if ra := r.header.Get("Retry-After"); (tc.status == http.StatusServiceUnavailable) != (ra == "5") {
				t.Errorf("%d with Retry-After %q", tc.status, ra)
			}
			if bytes.Contains(r.raw, []byte("CKR")) || bytes.Contains(r.raw, []byte("hsm")) {
				t.Errorf("internal detail in the response: %s", r.raw)
			}
			// The SAD was consumed before signing and stays consumed.
			if e.sadExists(sad) {
				t.Error("SAD survived")
			}
			entries := e.auditEntries()
			if len(entries) != 2 || entries[0].Outcome != store.AuditGranted ||
				entries[1].Outcome != store.AuditFailed || entries[1].Ref != entries[0].Seq || entries[1].Reason != tc.reason {
				for _, a := range entries {
					t.Logf("audit %+v", a)
				}
				t.Error("want a granted entry followed by a failed one referring to it")
			}
			if bytes.Contains(e.auditRaw(), []byte("secret internal detail")) {
				t.Error("the HSM error text went into the audit log")
			}
		})
	}
}

type envStore = csc.Store

func TestStoreFailureIsServerError(t *testing.T) {
	e := newEnv(t)
	bearer, cred := e.alice()
	d := digest("disk full")
	sad := e.sad("alice", "rp1", cred, time.Minute, d)
	e.h.Store = brokenBatch{cscStore(e.db)}
	wantError(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)), http.StatusInternalServerError, "server_error", "Internal error")
	if !e.sadExists(sad) {
		t.Error("SAD consumed although the transaction failed")
	}
}

// brokenBatch fails every Batch, as a full disk would.
type brokenBatch struct{ envStore }

func (brokenBatch) Batch(context.Context, func(csc.Tx) error) error {
	return errors.New("store: write /var/lib/signd/signd.db: no space left on device")
}

// raceSAD presents one SAD of alice's for the digest of doc in n signHash
// requests released at once: exactly one must get a signature, which must
// verify, and every other answer must be the spent-SAD refusal.
func (e *env) raceSAD(t *testing.T, n int, bearer, cred, doc string) {
	t.Helper()
	d := digest(doc)
	sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
	results := make([]response, n)
	ok := 0
	storetest.AtOnce(n, func(i int) {
		results[i] = e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
	})
	for _, r := range results {
		if r.status == http.StatusOK {
			ok++
			e.verify(cred, d, signatures(t, r)[0])
			continue
		}
		wantError(t, r, http.StatusBadRequest, "invalid_request", "Invalid parameter SAD")
	}
	if ok != 1 {
		t.Errorf("%d signatures from one SAD, want exactly 1", ok)
	}
}

// TestSignHashAuditsAlgorithm: every signHash entry, granted or refused,
// records the request's signAlgo and its hashAlgo where it gave one, as
// sent when it is a dotted-decimal OID (one signd does not sign with
// too), and nothing of any other value.
func TestSignHashAuditsAlgorithm(t *testing.T) {
	e := newEnv(t)
	bearer, cred := e.alice()
	d := digest("audited algorithm")
	const sha1WithRSA = "1.2.840.113549.1.1.5"
	cases := []struct {
		name               string
		body               func(sad string) string
		outcome            string
		signAlgo, hashAlgo string
	}{
		{"rsaEncryption with hashAlgo", func(sad string) string { return signHashBody(cred, sad, d) }, store.AuditGranted, rsaEnc, sha256O},
		{"sha256WithRSA without hashAlgo", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", sha256R)
		}, store.AuditGranted, sha256R, ""},
		{"an OID signd does not sign with", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", sha1WithRSA)
		}, store.AuditRefused, sha1WithRSA, ""},
		{"hashAlgo of another hash", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", sha256R, "hashAlgo", "2.16.840.1.101.3.4.2.3")
		}, store.AuditRefused, sha256R, "2.16.840.1.101.3.4.2.3"},
		{"a refusal before the algorithm is looked at", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{"not base64!"}, "signAlgo", rsaEnc, "hashAlgo", sha256O)
		}, store.AuditRefused, rsaEnc, sha256O},
		{"unknown SAD", func(string) string { return signHashBody(cred, "no such SAD", d) }, store.AuditRefused, rsaEnc, sha256O},
		{"text that is no OID", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", "<sha256WithRSA>", "hashAlgo", "2.16.840.1.101.3.4.2.01")
		}, store.AuditRefused, "", ""},
		{"an over-long OID", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", "1.2."+strings.Repeat("9", 80))
		}, store.AuditRefused, "", ""},
		{"signAlgo not a string", func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", []string{b64(d)}, "signAlgo", []string{rsaEnc})
		}, store.AuditRefused, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sad := e.sad("alice", "rp1", cred, 5*time.Minute, d)
			r := e.call("signatures/signHash", bearer, tc.body(sad))
			if (r.status == http.StatusOK) != (tc.outcome == store.AuditGranted) {
				t.Fatalf("signHash: %d %s", r.status, r.raw)
			}
			entries := e.auditEntries()
			last := entries[len(entries)-1]
			if last.Kind != store.AuditSignHash || last.Outcome != tc.outcome || last.SignAlgo != tc.signAlgo || last.HashAlgo != tc.hashAlgo {
				t.Errorf("audit entry %s %s sign_algo %q hash_algo %q; want %s %q %q",
					last.Kind, last.Outcome, last.SignAlgo, last.HashAlgo, tc.outcome, tc.signAlgo, tc.hashAlgo)
			}
		})
	}
	e.view(func(tx store.Tx) error {
		if _, _, err := store.VerifyAudit(tx); err != nil {
			t.Errorf("audit chain: %v", err)
		}
		return nil
	})
}

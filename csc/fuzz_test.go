package csc_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// softSigner signs with software RSA keys, by key ID, so that the fuzz
// targets run without SoftHSM2.
type softSigner map[string]*rsa.PrivateKey

func (s softSigner) SignDigests(_ context.Context, keyID []byte, opts crypto.SignerOpts, digests [][]byte) ([][]byte, error) {
	k, ok := s[string(keyID)]
	if !ok {
		return nil, hsm.ErrKeyNotFound
	}
	sigs := make([][]byte, len(digests))
	for i, digest := range digests {
		var err error
		if _, ok := opts.(*rsa.PSSOptions); ok {
			sigs[i], err = rsa.SignPSS(rand.Reader, k, opts.HashFunc(), digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sigs[i], err = rsa.SignPKCS1v15(nil, k, opts.HashFunc(), digest)
		}
		if err != nil {
			return nil, err
		}
	}
	return sigs, nil
}

func (s softSigner) CheckKey(_ context.Context, keyID []byte) error {
	if _, ok := s[string(keyID)]; !ok {
		return hsm.ErrKeyNotFound
	}
	return nil
}

// Fixed values of the fuzz fixture: the fuzzing engine sends inputs from
// one process to its workers, so whatever a seed names (bearer, SAD,
// credential IDs) must be the same in every process.
const (
	fzBearer   = "fuzz-bearer-alice-0123456789abcdefghijklmnopqrstuvwxyz"
	fzSAD      = "fuzz-sad-alice-0123456789abcdefghijklmnopqrstuvwxyz"
	fzEnabled  = "fuzzcred-a-enabled"
	fzDisabled = "fuzzcred-a-disabled"
	fzPending  = "fuzzcred-a-pending"
	fzOfBob    = "fuzzcred-b-enabled"
	fzSHA256O  = "2.16.840.1.101.3.4.2.1"
	fzRSAEnc   = "1.2.840.113549.1.1.1"
)

// fuzzEnv is a CSC API over an in-memory store with alice's credentials (one
// enabled, one disabled, one pending), one of bob's, alice's service
// token and a SAD for her enabled credential and fzDigest.
type fuzzEnv struct {
	*env
	handler http.Handler
	leaf    *x509.Certificate // of fzEnabled
	digest  []byte
	audit   store.AuditVerifier // entries verified so far
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	keyID := []byte("fuzz-key-1")
	e := newEnv(f, withSigner(softSigner{string(keyID): key}))
	fe := &fuzzEnv{env: e, handler: e.srv.Config.Handler, digest: digest("fuzz")}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	now := e.clock.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fuzz CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		f.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "alice signer", Organization: []string{"Example Org"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		f.Fatal(err)
	}
	fe.leaf, _ = x509.ParseCertificate(leafDER)
	chain := [][]byte{leafDER, caDER}
	e.update(func(tx store.Tx) error {
		for _, c := range []store.Credential{
			{ID: fzEnabled, Owner: "alice", Status: store.CredentialEnabled, Chain: chain, Description: "fuzz"},
			{ID: fzDisabled, Owner: "alice", Status: store.CredentialDisabled, Chain: chain},
			{ID: fzPending, Owner: "alice", Status: store.CredentialPending},
			{ID: fzOfBob, Owner: "bob", Status: store.CredentialEnabled, Chain: chain},
		} {
			c.KeyID, c.Label, c.Algorithm, c.KeyBits = keyID, "fuzz-key", store.AlgRSA2048, 2048
			if err := tx.CreateCredential(&c); err != nil {
				return err
			}
		}
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint(fzBearer), Kind: store.TokenAccess, ClientID: "rp1", Username: "alice",
			Scopes: []string{"service"}, ExpiresAt: now.Add(time.Hour),
		})
	})
	fe.mintSAD(f)
	return fe
}

// mintSAD (re)creates the fixture's SAD when a request consumed it.
func (fe *fuzzEnv) mintSAD(t testing.TB) {
	err := fe.db.Update(context.Background(), func(tx store.Tx) error {
		if _, err := tx.Token(store.Fingerprint(fzSAD)); err == nil {
			return nil
		}
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint(fzSAD), Kind: store.TokenSAD, ClientID: "rp1", Username: "alice",
			Scopes: []string{"credential"}, CredentialID: fzEnabled, Hashes: [][]byte{fe.digest},
			ExpiresAt: fe.clock.Now().Add(time.Hour),
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkAudit verifies the entries appended since the last call: the chain
// holds after every request.
func (fe *fuzzEnv) checkAudit(t *testing.T) []*store.AuditEntry {
	var added []*store.AuditEntry
	err := fe.db.View(context.Background(), func(tx store.Tx) error {
		return tx.AuditRecords(fe.audit.Count()+1, func(seq uint64, raw []byte) error {
			a, err := fe.audit.Check(seq, raw)
			added = append(added, a)
			return err
		})
	})
	if err != nil {
		t.Fatalf("audit log after the request: %v", err)
	}
	return added
}

// printableDesc is the RFC 6749 §5.2 error_description character set.
func printableDesc(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c > 0x7e {
			return false
		}
	}
	return s != "" && len(s) <= 200
}

var fzMethods = []string{"credentials/list", "credentials/info", "signatures/signHash", "info"}

// FuzzCSCRequest sends any body under any Content-Type to each CSC method
// through the real Echo router and an in-memory store, with alice's valid
// Bearer. Whatever the body, the answer is 200 or a 400 invalid_request
// with a printable description, never 401 (the Bearer is never used up)
// and never a 5xx; every answer matches docs/openapi.yaml; a listing shows
// only alice's non-pending credentials in order, within maxResults;
// credentials/info describes only a credential of hers; a signature
// verifies with her certificate over a hash the SAD authorized; and the
// audit chain verifies after every signHash.
func FuzzCSCRequest(f *testing.F) {
	fe := newFuzzEnv(f)
	h64 := base64.StdEncoding.EncodeToString(fe.digest)
	for _, s := range []struct {
		method uint8
		body   string
	}{
		{0, `{}`}, {0, `{"maxResults":1}`}, {0, `{"maxResults":"2"}`}, {0, `{"maxResults":0}`},
		{0, `{"userID":null}`}, {0, `{"userID":"alice"}`}, {0, `{"maxResults":1,"pageToken":"eA"}`},
		{1, `{"credentialID":"` + fzEnabled + `"}`},
		{1, `{"credentialID":"` + fzEnabled + `","certificates":"chain","certInfo":true,"authInfo":true}`},
		{1, `{"credentialID":"` + fzDisabled + `","certificates":"none","lang":"nl-NL"}`},
		{1, `{"credentialID":"` + fzPending + `"}`}, {1, `{"credentialID":"` + fzOfBob + `"}`},
		{2, `{"credentialID":"` + fzEnabled + `","SAD":"` + fzSAD + `","hash":["` + h64 + `"],"hashAlgo":"` + fzSHA256O + `","signAlgo":"` + fzRSAEnc + `"}`},
		{2, `{"credentialIDs":["` + fzEnabled + `"],"SAD":"` + fzSAD + `","hash":["` + strings.TrimRight(h64, "=") + `"],"signAlgo":"1.2.840.113549.1.1.11"}`},
		{2, `{"credentialID":"` + fzOfBob + `","SAD":"` + fzSAD + `","hash":["` + h64 + `"],"signAlgo":"1.2.840.113549.1.1.11"}`},
		{2, `{"credentialID":"` + fzEnabled + `","SAD":"` + fzBearer + `","hash":["` + h64 + `"],"signAlgo":"1.2.840.113549.1.1.11"}`},
		{2, `{"credentialID":"` + fzEnabled + `","SAD":"x","hash":[],"signAlgo":"` + fzRSAEnc + `"}`},
		{3, `{"lang":"nl-NL"}`}, {3, ``},
	} {
		f.Add(s.method, "application/json", []byte(s.body))
	}
	f.Add(uint8(2), "text/plain", []byte(`{}`))
	f.Add(uint8(0), "", []byte(""))
	f.Fuzz(func(t *testing.T, m uint8, ct string, body []byte) {
		method := fzMethods[int(m)%len(fzMethods)]
		req := httptest.NewRequest(http.MethodPost, "/csc/v1/"+method, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fzBearer)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		rec := httptest.NewRecorder()
		fe.handler.ServeHTTP(rec, req)
		res := rec.Result()
		raw := rec.Body.Bytes()
		if err := validateResponse(req, body, res, raw); err != nil {
			t.Fatalf("%s %q: response does not match docs/openapi.yaml: %v\n%d %s", method, body, err, res.StatusCode, raw)
		}
		if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
			t.Fatalf("%s %q: Content-Type %q", method, body, got)
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %q: %d, body is not a JSON object: %q", method, body, res.StatusCode, raw)
		}
		switch res.StatusCode {
		case http.StatusOK:
			fe.checkOK(t, method, body, out)
		case http.StatusBadRequest:
			var e struct{ Error, Desc string }
			_ = json.Unmarshal(out["error"], &e.Error)
			_ = json.Unmarshal(out["error_description"], &e.Desc)
			if e.Error != "invalid_request" || !printableDesc(e.Desc) || len(out) != 2 {
				t.Fatalf("%s %q: 400 %s", method, body, raw)
			}
		default:
			t.Fatalf("%s %q: status %d %s", method, body, res.StatusCode, raw)
		}
		if method == "signatures/signHash" {
			outcome := store.AuditRefused
			if res.StatusCode == http.StatusOK {
				outcome = store.AuditGranted
			}
			added := fe.checkAudit(t)
			if len(added) != 1 || added[0].Kind != store.AuditSignHash || added[0].User != "alice" ||
				added[0].Outcome != outcome || len(added[0].Credential) > 128+len("sha256:") {
				t.Fatalf("%q: %d %s; audit entries %+v", body, res.StatusCode, raw, added)
			}
			fe.mintSAD(t)
		}
	})
}

// checkOK checks a 200 answer of method.
func (fe *fuzzEnv) checkOK(t *testing.T, method string, body []byte, out map[string]json.RawMessage) {
	t.Helper()
	switch method {
	case "credentials/list":
		var ids []string
		if err := json.Unmarshal(out["credentialIDs"], &ids); err != nil {
			t.Fatalf("%q: credentialIDs %s", body, out["credentialIDs"])
		}
		listed := []string{fzDisabled, fzEnabled} // alice's, not pending, in ID order
		limit := int64(100)                       // csc.max_results_default
		var req map[string]json.RawMessage
		_ = json.Unmarshal(body, &req)
		var n json.Number
		if json.Unmarshal(req["maxResults"], &n) == nil {
			if v, err := n.Int64(); err == nil {
				limit = v
			}
		}
		if !slices.IsSorted(ids) || int64(len(ids)) > limit || slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(listed, id) }) {
			t.Fatalf("%q: listed %v", body, ids)
		}
		if _, more := out["nextPageToken"]; more != (len(ids) > 0 && ids[len(ids)-1] != fzEnabled) {
			t.Fatalf("%q: listed %v, nextPageToken %s", body, ids, out["nextPageToken"])
		}
	case "credentials/info":
		var req map[string]json.RawMessage
		_ = json.Unmarshal(body, &req)
		var id string
		_ = json.Unmarshal(req["credentialID"], &id)
		if id != fzEnabled && id != fzDisabled {
			t.Fatalf("%q: described %s", body, out["key"])
		}
	case "signatures/signHash":
		var sigs []string
		if err := json.Unmarshal(out["signatures"], &sigs); err != nil || len(sigs) != 1 {
			t.Fatalf("%q: signatures %s", body, out["signatures"])
		}
		sig, err := base64.StdEncoding.Strict().DecodeString(sigs[0])
		if err == nil {
			err = rsa.VerifyPKCS1v15(fe.leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, fe.digest, sig)
		}
		if err != nil {
			t.Fatalf("%q: signature does not verify over the SAD's hash: %v", body, err)
		}
	case "info":
	default:
		t.Fatal(errors.New("unknown method " + method))
	}
}

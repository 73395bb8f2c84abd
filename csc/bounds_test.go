package csc_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/store"
)

// hashArray is the JSON text of a hash array of n distinct, well-formed
// SHA-256 digests.
func hashArray(n int) string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = b64(digest(fmt.Sprint("flood ", i)))
	}
	data, _ := json.Marshal(hs)
	return string(data)
}

// floodBody is a signHash body with an unknown SAD and as many hashes as
// fit in limit bytes.
func floodBody(cred string, limit int) (body, hashes string, n int) {
	build := func(n int) (string, string) {
		a := hashArray(n)
		return fmt.Sprintf(`{"credentialID":%q,"SAD":"no-such-sad","hash":%s,"hashAlgo":%q,"signAlgo":%q}`, cred, a, sha256O, rsaEnc), a
	}
	n = limit / 47 // 44 base64 characters, two quotes and a comma each
	for body, hashes = build(n); len(body) > limit; body, hashes = build(n) {
		n--
	}
	return body, hashes, n
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestSignHashHashFlood is the attack of CSC v1 §11.9 on the audit log: a
// client with a valid Bearer sends signHash requests with an invalid SAD
// and as many hashes as the body limit lets through. Every one is refused,
// and each refusal's audit entry has a fixed size: 50 of them grow the
// bbolt file by less than 1 MB, not by 50 times the hashes.
func TestSignHashHashFlood(t *testing.T) {
	e := newBoltEnv(t)
	bearer, cred := e.alice()

	// 100 000 hashes are 4.7 MB of JSON: the body limit refuses it unread.
	huge := fmt.Sprintf(`{"credentialID":%q,"SAD":"no-such-sad","hash":%s,"signAlgo":%q}`, cred, hashArray(100_000), sha256R)
	wantError(t, e.call("signatures/signHash", bearer, huge), http.StatusBadRequest, "invalid_request", "Request body larger than 65536 bytes")

	body, hashes, n := floodBody(cred, 64<<10)
	if n < 1000 {
		t.Fatalf("only %d hashes fit in 64 KiB", n)
	}
	fileBefore, auditBefore := fileSize(t, e.dbPath), len(e.auditRaw())
	seqBefore := len(e.auditEntries())
	const requests = 50
	for range requests {
		wantError(t, e.call("signatures/signHash", bearer, body), http.StatusBadRequest, "invalid_request", "Too many hashes: at most 100 per request")
	}
	fileGrowth, auditGrowth := fileSize(t, e.dbPath)-fileBefore, len(e.auditRaw())-auditBefore
	t.Logf("%d requests of %d hashes (%d bytes): bbolt file +%d bytes, audit bucket +%d bytes", requests, n, len(body), fileGrowth, auditGrowth)
	if fileGrowth >= 1<<20 {
		t.Errorf("the bbolt file grew by %d bytes for %d refused requests, want < 1 MiB", fileGrowth, requests)
	}
	if auditGrowth >= requests*1024 {
		t.Errorf("the audit log grew by %d bytes for %d refusals, want < 1 KiB each", auditGrowth, requests)
	}
	entries := e.auditEntries()
	if len(entries) != seqBefore+requests {
		t.Fatalf("%d new audit entries, want %d", len(entries)-seqBefore, requests)
	}
	sum := sha256.Sum256([]byte(hashes))
	for _, a := range entries[seqBefore:] {
		if a.Outcome != store.AuditRefused || a.Reason != "Too many hashes: at most 100 per request" ||
			len(a.Hashes) != 0 || a.HashCount != 101 || a.HashesSHA256 != hex.EncodeToString(sum[:]) ||
			a.User != "alice" || a.Client != "rp1" || a.Credential != cred {
			t.Fatalf("refusal entry %+v, want refused, no hashes, count 101, digest %x", a, sum)
		}
	}
}

// TestSignHashCredentialIDBounded: an over-long credentialID (no stored
// credential has one) is recorded as its digest, so it cannot inflate the
// audit log either.
func TestSignHashCredentialIDBounded(t *testing.T) {
	e := newEnv(t)
	bearer := e.accessToken("alice", "rp1")
	long := strings.Repeat("c", 60<<10)
	wantError(t, e.call("signatures/signHash", bearer, signHashBody(long, "no-such-sad", digest("x"))), http.StatusBadRequest, "invalid_request", "Invalid parameter credentialID")
	entries := e.auditEntries()
	a := entries[len(entries)-1]
	sum := sha256.Sum256([]byte(long))
	if want := "sha256:" + hex.EncodeToString(sum[:]); a.Credential != want {
		t.Errorf("credential recorded as %.80q..., want %s", a.Credential, want)
	}
	if n := len(e.auditRaw()); n > 2048 {
		t.Errorf("audit log is %d bytes after one refusal", n)
	}
}

// TestSignHashHashCount: the hash array is capped at Handler.MaxHashes
// before any hash is decoded, and at the SAD's number of hashes
// (numSignatures) once the SAD is found.
func TestSignHashHashCount(t *testing.T) {
	const limit = 4
	e := newEnv(t, func(h *csc.Handler) { h.MaxHashes = limit })
	bearer, cred := e.alice()
	ds := make([][]byte, limit+1)
	for i := range ds {
		ds[i] = digest(fmt.Sprint("count ", i))
	}
	tooMany := fmt.Sprintf("Too many hashes: at most %d per request", limit)
	const bad = http.StatusBadRequest

	rows := []struct {
		name    string
		sadFor  [][]byte // nil = no SAD minted
		request func(sad string) string
		desc    string // "" = signed
		reason  string // audit reason of a refusal
		count   int    // hash_count of a refusal
		burned  bool
	}{
		{name: "limit", sadFor: ds[:limit], request: func(sad string) string { return signHashBody(cred, sad, ds[:limit]...) }},
		{name: "limit+1", sadFor: ds, request: func(sad string) string { return signHashBody(cred, sad, ds...) },
			desc: tooMany, reason: tooMany, count: limit + 1},
		{name: "limit+1, all but the first malformed: refused before any is decoded", sadFor: ds[:1], request: func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", raw(`["`+b64(ds[0])+`",1,"*",null,""]`), "signAlgo", sha256R)
		}, desc: tooMany, reason: tooMany, count: limit + 1},
		{name: "more hashes than the SAD's numSignatures", sadFor: ds[:2], request: func(sad string) string { return signHashBody(cred, sad, ds[:3]...) },
			desc: "Hash is not authorized by the SAD.", reason: "3 hashes, the SAD authorizes 2 (burned)", count: 3, burned: true},
		{name: "fewer hashes than the SAD's numSignatures", sadFor: ds[:2], request: func(sad string) string { return signHashBody(cred, sad, ds[0]) },
			desc: "Hash is not authorized by the SAD.", reason: "1 hashes, the SAD authorizes 2 (burned)", count: 1, burned: true},
		{name: "no hash array", sadFor: ds[:1], request: func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "signAlgo", sha256R)
		}, desc: "Missing (or invalid type) array parameter hash", reason: "Missing (or invalid type) array parameter hash"},
		{name: "hash not an array", sadFor: ds[:1], request: func(sad string) string {
			return body("credentialID", cred, "SAD", sad, "hash", b64(ds[0]), "signAlgo", sha256R)
		}, desc: "Missing (or invalid type) array parameter hash", reason: "Missing (or invalid type) array parameter hash"},
		{name: "SAD's numSignatures, other hashes", sadFor: ds[:2], request: func(sad string) string { return signHashBody(cred, sad, ds[2:4]...) },
			desc: "Hash is not authorized by the SAD.", reason: "hashes differ from the SAD's (burned)", count: 2, burned: true},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			sad := e.sad("alice", "rp1", cred, time.Minute, tc.sadFor...)
			req := tc.request(sad)
			r := e.call("signatures/signHash", bearer, req)
			entries := e.auditEntries()
			a := entries[len(entries)-1]
			if tc.desc == "" {
				sigs := signatures(t, r)
				if len(sigs) != limit {
					t.Fatalf("%d signatures", len(sigs))
				}
				// A grant lists its hashes (as many as the SAD has).
				if a.Outcome != store.AuditGranted || len(a.Hashes) != limit || a.Hashes[0] != hexOf(ds[0]) || a.HashCount != 0 || a.HashesSHA256 != "" {
					t.Errorf("grant entry %+v", a)
				}
				return
			}
			wantError(t, r, bad, "invalid_request", tc.desc)
			var p map[string]json.RawMessage
			if err := json.Unmarshal([]byte(req), &p); err != nil {
				t.Fatal(err)
			}
			wantSum := "" // no hash member, no digest
			if raw, ok := p["hash"]; ok {
				sum := sha256.Sum256(raw)
				wantSum = hex.EncodeToString(sum[:])
			}
			if a.Outcome != store.AuditRefused || a.Reason != tc.reason || len(a.Hashes) != 0 ||
				a.HashCount != tc.count || a.HashesSHA256 != wantSum {
				t.Errorf("refusal entry %+v, want reason %q, count %d, digest %q", a, tc.reason, tc.count, wantSum)
			}
			if e.sadExists(sad) == tc.burned {
				t.Errorf("SAD stored after the refusal: %v, want %v", e.sadExists(sad), !tc.burned)
			}
		})
	}

	t.Run("default limit is 100", func(t *testing.T) {
		e := newEnv(t)
		bearer, cred := e.alice()
		many := make([][]byte, 101)
		for i := range many {
			many[i] = digest(fmt.Sprint("default ", i))
		}
		wantError(t, e.call("signatures/signHash", bearer, signHashBody(cred, "no-such-sad", many...)), bad, "invalid_request", "Too many hashes: at most 100 per request")
		wantError(t, e.call("signatures/signHash", bearer, signHashBody(cred, "no-such-sad", many[:100]...)), bad, "invalid_request", "Invalid parameter SAD")
	})
}

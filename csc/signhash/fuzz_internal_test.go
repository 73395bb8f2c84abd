package signhash

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
)

// Real request bodies, as the handler tests, pyHanko and the CSC v1
// specification's samples send them. The 32-byte digest is SHA-256("fuzz").
const (
	seedDigest = "k4ULcHWF5ATklRo93B8Fo0s9T1/AgdYW9G2KLo8cjmg="
	seedCred   = "kr3e3rdpe6muvlifxu2m3wpecu"
	// pssSHA256Params is base64 DER RSASSA-PSS-params: SHA-256, MGF1 with
	// SHA-256, salt 32.
	pssSHA256Params = "MDSgDzANBglghkgBZQMEAgEFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgEFAKIDAgEg"
)

// signHashBodies seed the fuzz target of this package.
var signHashBodies = []string{
	`{"credentialID":"` + seedCred + `","SAD":"_TiHRG-bAH3XlFQZ3ndFhkXf9P24_TiHRG-bAH3XlFQ","hash":["` + seedDigest + `"],"hashAlgo":"2.16.840.1.101.3.4.2.1","signAlgo":"1.2.840.113549.1.1.1"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.11"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.11","hashAlgo":"2.16.840.1.101.3.4.2.1","signAlgoParams":"BQA=","clientData":"12345678"}`,
	`{"credentialIDs":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.1","hashAlgo":"2.16.840.1.101.3.4.2.1"}`,
	`{"credentialID":"` + seedCred + `","credentialIDs":["` + seedCred + `"],"SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.1","hashAlgo":"2.16.840.1.101.3.4.2.1"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + strings.TrimRight(seedDigest, "=") + `","` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.1","hashAlgo":"2.16.840.1.101.3.4.2.1"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.10","signAlgoParams":"` + pssSHA256Params + `"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + strings.Repeat("A", 64) + `"],"signAlgo":"1.2.840.10045.4.3.3","hashAlgo":"2.16.840.1.101.3.4.2.2"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + strings.Repeat("A", 86) + `=="],"signAlgo":"1.2.840.113549.1.1.13"}`,
	`{"credentialID":"` + seedCred + `","SAD":"s","hash":["` + seedDigest + `"],"signAlgo":"1.2.840.113549.1.1.10","signAlgoParams":"MDSgDzANBglghkgBZQMEAgEFAKEcMBoGCSqGSIb3DQEBCDANBglghkgBZQMEAgEFAKIDAgEU"}`,
	// other methods' bodies
	`{}`, `{"maxResults":1}`, `{"credentialID":"` + seedCred + `","certificates":"chain"}`,
}

// parseRefusals matches every description parseSignHash may answer: the
// specification's texts (reference/csc.md) and signd's additions. A
// description never echoes request content beyond a parameter name.
var parseRefusals = regexp.MustCompile(`^(` +
	`Missing \(or invalid type\) (string|array) parameter [A-Za-z]+` +
	`|Invalid parameter [A-Za-z]+` +
	`|Too many hashes: at most [0-9]+ per request` +
	`|` + regexp.QuoteMeta(protocol.DescEmptyHash) +
	`|` + regexp.QuoteMeta(protocol.DescBadBase64) +
	`|` + regexp.QuoteMeta(protocol.DescDigestLength) +
	`|` + regexp.QuoteMeta(descCredIDsConflict) +
	`|` + regexp.QuoteMeta(descPSSParamsDER) +
	`|` + regexp.QuoteMeta(descPSSParamsHash) +
	`|` + regexp.QuoteMeta(descPSSParamsMGF) +
	`|` + regexp.QuoteMeta(descPSSParamsSalt) +
	`|` + regexp.QuoteMeta(descPSSParamsTrailer) +
	`)$`)

// FuzzParseSignHash parses signHash bodies against a reference reading of
// CSC v1 §11.9 over encoding/json: an accepted request has the credential
// and SAD the body names, 1 to maxHashes digests that are the standard
// base64 of digests of the signature's hash, a supported signAlgo (with a
// supported hashAlgo where rsaEncryption needs it, a hashAlgo that names
// the signature's hash when present, RSASSA-PSS-params where PSS needs
// them); it survives a round trip through a canonical body unchanged. A refusal is a 400 with a known description, and the
// count its audit entry records never exceeds maxHashes+1.
func FuzzParseSignHash(f *testing.F) {
	for _, b := range signHashBodies {
		f.Add([]byte(b), uint8(4))
		f.Add([]byte(b), uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, capacity uint8) {
		maxHashes := int(capacity%8) + 1
		p, pe := protocol.ParseObject(body)
		if pe != nil {
			return // FuzzParseObject and FuzzReadParams cover refusals of the body
		}
		req, e := parseSignHash(p, maxHashes)
		if req.hashCount > maxHashes+1 {
			t.Fatalf("%q: hash count %d past the cap %d", body, req.hashCount, maxHashes)
		}
		if !bytes.Equal(req.hashesRaw, p["hash"]) {
			t.Fatalf("%q: audit hash text %q, body has %q", body, req.hashesRaw, p["hash"])
		}
		if e != nil {
			if e.Status != http.StatusBadRequest || e.Code != oauth.CodeInvalidRequest || !parseRefusals.MatchString(e.Description) {
				t.Fatalf("%q: refused with %d %s %q", body, e.Status, e.Code, e.Description)
			}
			return
		}
		var ref map[string]json.RawMessage
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("%q accepted, encoding/json refuses it: %v", body, err)
		}
		refString := func(name string) (string, bool) {
			var s string
			raw, ok := ref[name]
			if !ok || json.Unmarshal(raw, &s) != nil || string(raw) == "null" {
				return "", false
			}
			return s, true
		}
		id, hasID := refString("credentialID")
		ids, hasIDs := refString("credentialIDs")
		if list := []string{}; !hasIDs && json.Unmarshal(ref["credentialIDs"], &list) == nil && len(list) == 1 {
			ids, hasIDs = list[0], true
		}
		switch {
		case req.credentialID == "":
			t.Fatalf("%q: accepted without a credential", body)
		case hasID && id != req.credentialID, hasIDs && ids != req.credentialID, !hasID && !hasIDs:
			t.Fatalf("%q: credential %q, body has %q / %q", body, req.credentialID, id, ids)
		}
		if sad, ok := refString("SAD"); !ok || sad == "" || sad != req.sad {
			t.Fatalf("%q: SAD %q, body has %q", body, req.sad, sad)
		}
		var hashes []string
		if err := json.Unmarshal(ref["hash"], &hashes); err != nil || len(hashes) == 0 || len(hashes) > maxHashes || len(hashes) != len(req.hashes) {
			t.Fatalf("%q: %d hashes accepted, body has %d (cap %d, %v)", body, len(req.hashes), len(hashes), maxHashes, err)
		}
		for i, h := range hashes {
			d, err := base64.StdEncoding.Strict().DecodeString(h)
			if err != nil {
				d, err = base64.RawStdEncoding.Strict().DecodeString(h)
			}
			if err != nil || len(d) != req.algo.opts.HashFunc().Size() || !bytes.Equal(d, req.hashes[i]) {
				t.Fatalf("%q: hash %d %q read as %x (%v)", body, i, h, req.hashes[i], err)
			}
		}
		signAlgo, _ := refString("signAlgo")
		hashAlgo, hasHashAlgo := refString("hashAlgo")
		params, hasParams := refString("signAlgoParams")
		refHash := map[string]crypto.Hash{oidSHA256: crypto.SHA256, oidSHA384: crypto.SHA384, oidSHA512: crypto.SHA512}
		implied := map[string]crypto.Hash{
			oidSHA256WithRSA: crypto.SHA256, oidSHA384WithRSA: crypto.SHA384, oidSHA512WithRSA: crypto.SHA512,
			oidECDSAWithSHA256: crypto.SHA256, oidECDSAWithSHA384: crypto.SHA384, oidECDSAWithSHA512: crypto.SHA512,
		}
		got := req.algo.opts.HashFunc()
		switch {
		case signAlgo != req.algo.oid:
			t.Fatalf("%q: signAlgo %q read as %q", body, signAlgo, req.algo.oid)
		case signAlgo == oidRSAEncryption && refHash[hashAlgo] != got:
			t.Fatalf("%q: rsaEncryption with hashAlgo %q signs %v", body, hashAlgo, got)
		case signAlgo == OIDRSASSAPSS:
			if _, ok := req.algo.opts.(*rsa.PSSOptions); !ok || !hasParams {
				t.Fatalf("%q: PSS accepted as %T", body, req.algo.opts)
			}
		case signAlgo != oidRSAEncryption && implied[signAlgo] == 0:
			t.Fatalf("%q: signAlgo %q accepted", body, signAlgo)
		case signAlgo != oidRSAEncryption && implied[signAlgo] != got:
			t.Fatalf("%q: %s signs %v", body, signAlgo, got)
		}
		if hasHashAlgo && refHash[hashAlgo] != got {
			t.Fatalf("%q: hashAlgo %q accepted with %s (%v)", body, hashAlgo, signAlgo, got)
		}
		if signAlgo != OIDRSASSAPSS && hasParams && params != "" && (params != derNullBase64 || req.algo.ec) {
			t.Fatalf("%q: signAlgoParams %q accepted", body, params)
		}

		// Round trip: the request written canonically reads back the same.
		enc := make([]string, len(req.hashes))
		for i, d := range req.hashes {
			enc[i] = base64.StdEncoding.EncodeToString(d)
		}
		canonBody := map[string]any{
			"credentialID": req.credentialID, "SAD": req.sad, "hash": enc, "signAlgo": signAlgo,
		}
		for oid, h := range refHash {
			if h == got {
				canonBody["hashAlgo"] = oid
			}
		}
		if signAlgo == OIDRSASSAPSS {
			canonBody["signAlgoParams"] = params
		}
		canon, _ := json.Marshal(canonBody)
		p2, pe := protocol.ParseObject(canon)
		if pe != nil {
			t.Fatalf("canonical %s: %v", canon, pe)
		}
		again, e := parseSignHash(p2, maxHashes)
		if e != nil || again.credentialID != req.credentialID || again.sad != req.sad || !reflect.DeepEqual(again.hashes, req.hashes) || !reflect.DeepEqual(again.algo, req.algo) {
			t.Fatalf("round trip of %q through %s: %+v, %v", body, canon, again, e)
		}
	})
}

package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
	softhsmtest "github.com/signd/signd/softhsm-test"
)

// The tests of this file replay, request by request, what the CSC client
// libraries of reference/csc.md §3 send (pyHanko, SetaPDF, Laverca, the
// Cleverbase SDK): the same methods in the same order, the bodies byte for
// byte as each library's JSON encoder writes them (Python's separators,
// PHP's escaped slashes, Gson's field order) and the headers it sets,
// against the real daemon with its SoftHSM2 token and bbolt file. Every
// signature returned is verified by Go's crypto and by OpenSSL.

// clientCall sends one raw request as a client library does: POST with
// exactly header and body, no header added but what net/http must. It
// returns the status and the JSON body (nil for none).
func clientCall(t *testing.T, url string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	status, _, m := rawPost(t, url, header, body)
	return status, m
}

// rawPost is clientCall, returning the response headers too.
func rawPost(t *testing.T, url string, header map[string]string, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var m map[string]any
	if len(data) != 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("POST %s: %d %q is not JSON", url, res.StatusCode, data)
		}
	}
	return res.StatusCode, res.Header, m
}

// pyJSON writes v as Python's json.dumps does by default (aiohttp's
// json=): ", " and ": " between members, keys in insertion order. kv are
// key, value pairs.
func pyJSON(kv ...any) string {
	return jsonObject(", ", ": ", func(v any) string {
		if list, ok := v.([]string); ok {
			parts := make([]string, len(list))
			for j, s := range list {
				q, _ := json.Marshal(s)
				parts[j] = string(q)
			}
			return "[" + strings.Join(parts, ", ") + "]"
		}
		b, _ := json.Marshal(v)
		return string(b)
	}, kv...)
}

// phpJSON writes v as PHP's json_encode does by default: compact, keys in
// insertion order, "/" escaped as "\/".
func phpJSON(kv ...any) string {
	return jsonObject(",", ":", func(v any) string {
		b, _ := json.Marshal(v)
		return strings.ReplaceAll(string(b), "/", `\/`)
	}, kv...)
}

// jsonObject writes the key, value pairs kv as a JSON object, in their
// order: sep between members, colon between a key and its value, each
// value as value writes it.
func jsonObject(sep, colon string, value func(any) string, kv ...any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(sep)
		}
		k, _ := json.Marshal(kv[i])
		b.WriteString(string(k) + colon + value(kv[i+1]))
	}
	b.WriteByte('}')
	return b.String()
}

// pssParamsDER is RSASSA-PSS-params as asn1crypto writes pyHanko's
// optimal_pss_params: the hash and MGF1's hash as AlgorithmIdentifiers
// without parameters, the given salt, no trailer field.
func pssParamsDER(t *testing.T, hashOID asn1.ObjectIdentifier, salt int) string {
	t.Helper()
	mgfHash, err := asn1.Marshal(pkix.AlgorithmIdentifier{Algorithm: hashOID})
	if err != nil {
		t.Fatal(err)
	}
	der, err := asn1.Marshal(struct {
		Hash pkix.AlgorithmIdentifier `asn1:"explicit,tag:0"`
		MGF  pkix.AlgorithmIdentifier `asn1:"explicit,tag:1"`
		Salt int                      `asn1:"explicit,tag:2"`
	}{
		Hash: pkix.AlgorithmIdentifier{Algorithm: hashOID},
		MGF:  pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 8}, Parameters: asn1.RawValue{FullBytes: mgfHash}},
		Salt: salt,
	})
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// batchDigests returns n SHA-256 digests of distinct signed attributes,
// raw and in standard padded base64.
func batchDigests(name string, n int) ([][]byte, []string) {
	ds, b64 := make([][]byte, n), make([]string, n)
	for i := range ds {
		d := sha256.Sum256(fmt.Appendf(nil, "%%PDF-1.7 %s signed attributes %d", name, i))
		ds[i], b64[i] = d[:], base64.StdEncoding.EncodeToString(d[:])
	}
	return ds, b64
}

// leafOf returns the end-entity certificate of a credentials/info answer.
func leafOf(t *testing.T, info map[string]any) ([]byte, *x509.Certificate) {
	t.Helper()
	cert, _ := info["cert"].(map[string]any)
	certs, _ := cert["certificates"].([]any)
	if len(certs) == 0 {
		t.Fatalf("credentials/info without certificates: %v", info)
	}
	der, err := base64.StdEncoding.DecodeString(certs[0].(string))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return der, leaf
}

// signHashBody is the signHash request for one SHA-256 digest, signed
// with RSASSA-PKCS1-v1_5.
func signHashBody(cred, sad string, digest []byte) string {
	body, _ := json.Marshal(map[string]any{
		"credentialID": cred, "SAD": sad, "hash": []string{base64.StdEncoding.EncodeToString(digest)},
		"hashAlgo": "2.16.840.1.101.3.4.2.1", "signAlgo": "1.2.840.113549.1.1.1",
	})
	return string(body)
}

// verifyRSA checks sig over the SHA-256 digest with the RSA key of the
// certificate leafDER, with crypto/rsa and with `openssl pkeyutl -verify`.
func verifyRSA(t *testing.T, leafDER, digest, sig []byte) {
	t.Helper()
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPKCS1v15(leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, digest, sig); err != nil {
		t.Errorf("crypto/rsa: %v", err)
	}
	softhsmtest.VerifyWithOpenSSL(t, leafDER, digest, sig)
}

// signaturesOf decodes signHash's signatures, failing t unless there is
// one per hash.
func signaturesOf(t *testing.T, status int, res map[string]any, n int) [][]byte {
	t.Helper()
	list, _ := res["signatures"].([]any)
	if status != http.StatusOK || len(list) != n {
		t.Fatalf("signHash: %d %v, want %d signatures", status, res, n)
	}
	sigs := make([][]byte, n)
	for i, s := range list {
		str, _ := s.(string)
		sig, err := base64.StdEncoding.DecodeString(str)
		if err != nil || len(sig) == 0 {
			t.Fatalf("signature %d: %q is not base64", i, str)
		}
		sigs[i] = sig
	}
	return sigs
}

// TestClientPyHanko replays pyHanko's CSCSigner (csc_signer.py) with
// prefer_pss and a batch of five under one SAD: no info and no list (the
// user brings the service token); credentials/info with certificates
// "chain" and certInfo false, read for key.algo as a list and an int-able
// multisign; credentials/authorize with the PIN, hash before
// numSignatures; one signHash with hashAlgo always sent and RSASSA-PSS
// parameters as optimal_pss_params writes them (the key's longest salt).
// Then pyHanko's default mechanism, sha256WithRSAEncryption, for another
// batch, and the second use of a SAD, which pyHanko must see fail.
func TestClientPyHanko(t *testing.T) {
	e := newEnv(t, "")
	_, base, _ := startJourney(t, e)
	cred := enrollKey(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL", "--multisign", "10", "--auth-mode", "explicit")
	bearer := serviceToken(t, base)
	header := map[string]string{
		"Authorization": "Bearer " + bearer, "Content-Type": "application/json",
		"User-Agent": "Python/3.12 aiohttp/3.9.5", "Accept": "*/*", "Accept-Encoding": "gzip, deflate",
	}
	call := func(method, body string) (int, map[string]any) {
		t.Helper()
		return clientCall(t, base+"/csc/v1/"+method, header, body)
	}

	status, info := call("credentials/info", pyJSON("credentialID", cred, "certificates", "chain", "certInfo", false))
	if status != http.StatusOK {
		t.Fatalf("credentials/info: %d %v", status, info)
	}
	leafDER, leaf := leafOf(t, info)
	key, _ := info["key"].(map[string]any)
	algos, ok := key["algo"].([]any)
	if !ok || !slices.Contains(algos, any("1.2.840.113549.1.1.10")) || !slices.Contains(algos, any("1.2.840.113549.1.1.11")) {
		t.Fatalf("key.algo %v: pyHanko needs a list with rsassa_pss and sha256_rsa", key["algo"])
	}
	if n, ok := info["multisign"].(float64); !ok || n < 5 {
		t.Fatalf("multisign %v: pyHanko needs an int of at least the batch size", info["multisign"])
	}
	if scal, ok := info["SCAL"]; ok && scal != "1" && scal != "2" {
		t.Fatalf("SCAL %v: pyHanko wants \"1\" or \"2\"", scal)
	}
	pub := leaf.PublicKey.(*rsa.PublicKey)
	salt := (pub.N.BitLen()-1+7)/8 - sha256.Size - 2 // cryptography's calculate_max_pss_salt_length
	params := pssParamsDER(t, asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}, salt)

	for _, mech := range []struct {
		name, signAlgo, params string
		verify                 func(digest, sig []byte) error
		openssl                []string
	}{
		{"rsassa_pss", "1.2.840.113549.1.1.10", params,
			func(d, sig []byte) error {
				return rsa.VerifyPSS(pub, crypto.SHA256, d, sig, &rsa.PSSOptions{SaltLength: salt, Hash: crypto.SHA256})
			},
			[]string{"digest:sha256", "rsa_padding_mode:pss", "rsa_pss_saltlen:max", "rsa_mgf1_md:sha256"}},
		{"sha256_rsa", "1.2.840.113549.1.1.11", "",
			func(d, sig []byte) error { return rsa.VerifyPKCS1v15(pub, crypto.SHA256, d, sig) },
			[]string{"digest:sha256"}},
	} {
		t.Run(mech.name, func(t *testing.T) {
			digests, hashes := batchDigests(mech.name, 5)
			status, auth := call("credentials/authorize", pyJSON("credentialID", cred, "hash", hashes, "numSignatures", 5, "PIN", journeyPIN))
			sad, _ := auth["SAD"].(string)
			if _, ok := auth["expiresIn"].(float64); status != http.StatusOK || sad == "" || !ok {
				t.Fatalf("credentials/authorize: %d %v", status, auth)
			}
			kv := []any{"credentialID", cred, "SAD", sad, "hashAlgo", "2.16.840.1.101.3.4.2.1", "signAlgo", mech.signAlgo, "hash", hashes}
			if mech.params != "" {
				kv = append(kv, "signAlgoParams", mech.params)
			}
			status, res := call("signatures/signHash", pyJSON(kv...))
			for i, sig := range signaturesOf(t, status, res, 5) {
				if err := mech.verify(digests[i], sig); err != nil {
					t.Fatalf("signature %d: Go: %v", i, err)
				}
				softhsmtest.VerifyWithOpenSSLOpts(t, leafDER, digests[i], sig, mech.openssl...)
			}
			// PrefetchedSADAuthorizationManager: a second use must fail.
			status, res = call("signatures/signHash", pyJSON(kv...))
			wantCSCError(t, "second use of the SAD", status, res, http.StatusBadRequest, "invalid_request", "Invalid parameter SAD")
		})
	}
}

// TestClientSetaPDF replays SetaPDF-Signer-Addon-CSC (Client.php,
// Module.php): info with "{}" and no token, its oauth2 stripped of a
// trailing /oauth2/authorize; credentials/info; the SAD through the OAuth
// credential flow; signHash with hashAlgo always set, written by
// json_encode (every "/" of the base64 escaped). SetaPDF takes ECDSA only
// as a DER ECDSA-Sig-Value, so the credential is ECDSA P-256; an RSA
// credential follows with sha256WithRSAEncryption.
func TestClientSetaPDF(t *testing.T) {
	e := newEnv(t, "")
	rsaCred := journeyAlice(t, e)
	ecCred := enrollKeyType(t, e, "alice", "--key-type", "ec-p256")
	addr, _ := e.startDaemon()
	base := "http://" + addr
	header := map[string]string{"Content-Type": "application/json", "User-Agent": "GuzzleHttp/7"}

	status, info := clientCall(t, base+"/csc/v1/info", header, "{}")
	oauth2URI, _ := info["oauth2"].(string)
	if status != http.StatusOK || strings.TrimSuffix(oauth2URI, "/oauth2/authorize") == "" {
		t.Fatalf("info: %d %v", status, info)
	}
	flow := oauthFlow(t, base)
	service := flow("service", "state-service")
	header["Authorization"] = "Bearer " + service.AccessToken

	for _, tc := range []struct {
		name, cred, signAlgo string
		verify               func(pub crypto.PublicKey, d, sig []byte) error
	}{
		{"ECDSA P-256", ecCred, "1.2.840.10045.4.3.2", func(pub crypto.PublicKey, d, sig []byte) error {
			if !ecdsa.VerifyASN1(pub.(*ecdsa.PublicKey), d, sig) {
				return fmt.Errorf("not a DER ECDSA-Sig-Value over the digest (%d bytes)", len(sig))
			}
			return nil
		}},
		{"sha256WithRSAEncryption", rsaCred, "1.2.840.113549.1.1.11", func(pub crypto.PublicKey, d, sig []byte) error {
			return rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), crypto.SHA256, d, sig)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, info := clientCall(t, base+"/csc/v1/credentials/info", header, phpJSON("credentialID", tc.cred, "certificates", "chain", "certInfo", true))
			if status != http.StatusOK {
				t.Fatalf("credentials/info: %d %v", status, info)
			}
			leafDER, leaf := leafOf(t, info)
			// A digest whose base64 has a "/", which json_encode escapes.
			var d []byte
			for i := 0; ; i++ {
				s := sha256.Sum256(fmt.Appendf(nil, "%%PDF-1.7 SetaPDF %s %d", tc.name, i))
				if strings.Contains(base64.StdEncoding.EncodeToString(s[:]), "/") {
					d = s[:]
					break
				}
			}
			sad := credentialFlow(flow, tc.cred, d)
			body := phpJSON("credentialID", tc.cred, "SAD", sad, "hash", []string{base64.StdEncoding.EncodeToString(d)},
				"hashAlgo", "2.16.840.1.101.3.4.2.1", "signAlgo", tc.signAlgo)
			if !strings.Contains(body, `\/`) {
				t.Fatalf("body %s has no escaped slash", body)
			}
			status, res := clientCall(t, base+"/csc/v1/signatures/signHash", header, body)
			sig := signaturesOf(t, status, res, 1)[0]
			if err := tc.verify(leaf.PublicKey, d, sig); err != nil {
				t.Fatal(err)
			}
			softhsmtest.VerifyWithOpenSSLOpts(t, leafDER, d, sig, "digest:sha256")
		})
	}
}

// TestClientLaverca replays methics/laverca-csc-client: OkHttp's
// "application/json; charset=utf-8", Gson bodies (fields in declaration
// order, nulls left out); auth/login with HTTP Basic, credentials/list
// (maxResults written as a string, the type the specification's table
// declares), credentials/info, credentials/authorize with numSignatures
// = hash.size() and the PIN, signHash; an error answer is parsed as
// {error, error_description}.
func TestClientLaverca(t *testing.T) {
	e := newEnv(t, authLoginConfig)
	_, base, _ := startJourney(t, e)
	cred := enrollKey(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL", "--multisign", "2", "--auth-mode", "explicit")
	header := map[string]string{
		"Content-Type": "application/json; charset=utf-8", "User-Agent": "okhttp/4.12.0",
		"Authorization": basic("alice", journeyPassword), "Accept-Encoding": "gzip",
	}
	call := func(method, body string) (int, map[string]any) {
		t.Helper()
		return clientCall(t, base+"/csc/v1/"+method, header, body)
	}
	status, login := call("auth/login", `{"rememberMe":false}`)
	access, _ := login["access_token"].(string)
	if status != http.StatusOK || access == "" {
		t.Fatalf("auth/login: %d %v", status, login)
	}
	header["Authorization"] = "Bearer " + access

	status, list := call("credentials/list", `{"maxResults":"10"}`)
	if ids, _ := list["credentialIDs"].([]any); status != http.StatusOK || !slices.Contains(ids, any(cred)) {
		t.Fatalf("credentials/list: %d %v", status, list)
	}
	status, info := call("credentials/info", `{"credentialID":"`+cred+`","certificates":"chain","certInfo":true,"authInfo":true}`)
	if status != http.StatusOK || info["authMode"] != "explicit" {
		t.Fatalf("credentials/info: %d %v", status, info)
	}
	leafDER, _ := leafOf(t, info)
	digests, hashes := batchDigests("laverca", 2)
	quoted, _ := json.Marshal(hashes)

	// A wrong PIN first: Laverca reads the error object.
	status, res := call("credentials/authorize", `{"credentialID":"`+cred+`","numSignatures":2,"hash":`+string(quoted)+`,"PIN":"000000"}`)
	wantCSCError(t, "wrong PIN", status, res, http.StatusBadRequest, "invalid_pin", "The PIN is invalid")
	status, auth := call("credentials/authorize", `{"credentialID":"`+cred+`","numSignatures":2,"hash":`+string(quoted)+`,"PIN":"`+journeyPIN+`"}`)
	sad, _ := auth["SAD"].(string)
	if status != http.StatusOK || sad == "" {
		t.Fatalf("credentials/authorize: %d %v", status, auth)
	}
	status, res = call("signatures/signHash", `{"credentialID":"`+cred+`","SAD":"`+sad+`","hash":`+string(quoted)+
		`,"hashAlgo":"2.16.840.1.101.3.4.2.1","signAlgo":"1.2.840.113549.1.1.1"}`)
	for i, sig := range signaturesOf(t, status, res, 2) {
		verifyRSA(t, leafDER, digests[i], sig)
	}
}

// TestClientCleverbase replays alkem-io/cleverbase-sdk: the service code
// flow with redirect_uri, state and scope; the token request with HTTP
// Basic and client_id in the form too; credentials/list with {};
// credentials/info with chain and certInfo, refused by the SDK unless SCAL
// is "2"; the credential flow with numSignatures 1 and the hash in
// unpadded base64url; the token (token_type SAD); signHash with the hash
// in standard base64, rsaEncryption and hashAlgo, the service token as
// Bearer; the SDK verifies the signature itself.
func TestClientCleverbase(t *testing.T) {
	e := newEnv(t, "")
	cred, base, _ := startJourney(t, e)
	conf, _ := journeyClient(base)
	browser := oauthtest.NewBrowser(nil)
	code := func(scope, state string, extra ...oauth2.AuthCodeOption) string {
		t.Helper()
		c := conf
		c.Scopes = []string{scope}
		s, err := browser.Get(c.AuthCodeURL(state, extra...))
		if err != nil || s.Form == nil {
			t.Fatalf("%s: login page: %v", scope, err)
		}
		if s, err = browser.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve"); err != nil || s.Form == nil {
			t.Fatalf("%s: consent page: %v", scope, err)
		}
		set := map[string]string{}
		if scope == "credential" {
			set["pin"] = journeyPIN
		}
		if s, err = browser.Submit(s.Form, set, "approve"); err != nil || s.Query().Get("state") != state || s.Query().Get("code") == "" {
			t.Fatalf("%s: no code: %v", scope, err)
		}
		return s.Query().Get("code")
	}
	token := func(code string) map[string]any {
		t.Helper()
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {conf.RedirectURL}, "client_id": {"rp"}}
		req, _ := http.NewRequest(http.MethodPost, base+"/oauth2/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("rp", journeySecret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("token: %d %v %v", res.StatusCode, m, err)
		}
		if n, _ := m["expires_in"].(float64); n <= 0 {
			t.Fatalf("token: expires_in %v", m["expires_in"])
		}
		return m
	}

	service := token(code("service", "cb-service"))
	if service["token_type"] != "Bearer" {
		t.Fatalf("service token: %v", service)
	}
	header := map[string]string{"Authorization": "Bearer " + service["access_token"].(string), "Content-Type": "application/json", "User-Agent": "Go-http-client/1.1"}
	status, list := clientCall(t, base+"/csc/v1/credentials/list", header, `{}`)
	if ids, _ := list["credentialIDs"].([]any); status != http.StatusOK || len(ids) != 1 || ids[0] != cred {
		t.Fatalf("credentials/list: %d %v", status, list)
	}
	status, info := clientCall(t, base+"/csc/v1/credentials/info", header, `{"credentialID":"`+cred+`","certificates":"chain","certInfo":true}`)
	if status != http.StatusOK || info["SCAL"] != "2" || info["authMode"] != "oauth2code" {
		t.Fatalf("credentials/info: %d %v (the SDK refuses SCAL other than \"2\")", status, info)
	}
	leafDER, _ := leafOf(t, info)

	d := sha256.Sum256([]byte("%PDF-1.7 Cleverbase signed attributes"))
	sadToken := token(code("credential", "cb-credential", oauth2.SetAuthURLParam("credentialID", cred),
		oauth2.SetAuthURLParam("numSignatures", "1"), oauth2.SetAuthURLParam("hash", base64.RawURLEncoding.EncodeToString(d[:]))))
	if sadToken["token_type"] != "SAD" || sadToken["refresh_token"] != nil {
		t.Fatalf("credential token: %v", sadToken)
	}
	body, _ := json.Marshal(struct {
		CredentialID string   `json:"credentialID"`
		SAD          string   `json:"SAD"`
		Hash         []string `json:"hash"`
		HashAlgo     string   `json:"hashAlgo"`
		SignAlgo     string   `json:"signAlgo"`
	}{cred, sadToken["access_token"].(string), []string{base64.StdEncoding.EncodeToString(d[:])}, "2.16.840.1.101.3.4.2.1", "1.2.840.113549.1.1.1"})
	status, res := clientCall(t, base+"/csc/v1/signatures/signHash", header, string(body))
	verifyRSA(t, leafDER, d[:], signaturesOf(t, status, res, 1)[0])
}

package admin

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
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// dnNames maps the attribute types ParseDN accepts back to one of their
// names, for the round trip.
var dnNames = func() map[string]string {
	out := map[string]string{}
	for name, oid := range dnAttrs {
		if cur, ok := out[oid.String()]; !ok || name < cur {
			out[oid.String()] = name
		}
	}
	return out
}()

// FuzzParseDN parses CSR subjects as `signd credential create --subject`
// and the admin API take them (RFC 4514 strings). An accepted name keeps
// every attribute given, in order, with its unescaped value; it is DER
// encodable as a certificate subject and decodes back to the same
// attributes; and written back with escapeDNValue it parses to the same
// name (round trip).
func FuzzParseDN(f *testing.F) {
	for _, s := range []string{
		"CN=Alice Jansen,O=Example B.V.,C=NL", " CN = Alice , O = Ex ", "cn=Alice,o=Ex", `CN=Jansen\, Alice,O=Ex`,
		"GIVENNAME=Alice,SURNAME=Jansen,CN=Alice Jansen,SERIALNUMBER=PNONL-123456789,TITLE=Dr",
		"CN=alice,OU=Signing,OU=Legal,L=Utrecht,ST=Utrecht,STREET=Domplein 1,POSTALCODE=3512 JE,SN=J",
		"CN=" + escapeDNValue(`a+b="c"\d<e>;f`), "CN=A+O=B", `CN=A\`, "CN=", "CN=A,C=nl", "XX=1", "CN=A\x00B",
		"CN=a,CN=b", "CN=\\ lead", "CN=#hash", "CN=Ali\xffce",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, err := ParseDN(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			return
		}
		if len(s) > maxDNLen || strings.TrimSpace(s) == "" {
			t.Fatalf("%q accepted", s)
		}
		// Every attribute given is kept, in order.
		rdns, _ := splitUnescaped(s, ',')
		if len(name.Names) != len(rdns) {
			t.Fatalf("%q: %d attributes given, %d kept: %v", s, len(rdns), len(name.Names), name.Names)
		}
		seq := name.ToRDNSequence()
		if n := len(seq2names(seq)); n != len(rdns) {
			t.Fatalf("%q: %d attributes given, the subject encodes %d: %v", s, len(rdns), n, seq)
		}
		// DER round trip, as x509.CreateCertificateRequest encodes it.
		der, err := asn1.Marshal(seq)
		if err != nil {
			t.Fatalf("%q accepted, but the subject does not encode: %v", s, err)
		}
		var back pkix.RDNSequence
		if rest, err := asn1.Unmarshal(der, &back); err != nil || len(rest) != 0 {
			t.Fatalf("%q: subject DER does not decode: %v", s, err)
		}
		var again pkix.Name
		again.FillFromRDNSequence(&back)
		if !reflect.DeepEqual(attrs(again.Names), attrs(seq2names(seq))) {
			t.Fatalf("%q: DER round trip %v, want %v", s, again.Names, seq)
		}
		// String round trip through escapeDNValue.
		parts := make([]string, len(name.Names))
		for i, atv := range name.Names {
			v, _ := atv.Value.(string)
			if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("%q: value %q", s, v)
			}
			if atv.Type.Equal(dnAttrs["C"]) && (len(v) != 2 || v[0] < 'A' || v[0] > 'Z' || v[1] < 'A' || v[1] > 'Z') {
				t.Fatalf("%q: country %q is not two upper-case letters (ISO 3166-1 alpha-2)", s, v)
			}
			parts[i] = dnNames[atv.Type.String()] + "=" + escapeDNValue(v)
		}
		written := strings.Join(parts, ",")
		reparsed, err := ParseDN(written)
		if err != nil {
			t.Fatalf("%q written back as %q: %v", s, written, err)
		}
		if !reflect.DeepEqual(attrs(reparsed.Names), attrs(name.Names)) {
			t.Fatalf("%q written back as %q parses to %v, want %v", s, written, reparsed.Names, name.Names)
		}
	})
}

func seq2names(seq pkix.RDNSequence) []pkix.AttributeTypeAndValue {
	var out []pkix.AttributeTypeAndValue
	for _, rdn := range seq {
		out = append(out, rdn...)
	}
	return out
}

// attrs is a name's attributes as "oid=value", sorted (the encoding puts
// the standard attributes in a fixed order).
func attrs(names []pkix.AttributeTypeAndValue) []string {
	out := make([]string, len(names))
	for i, atv := range names {
		out[i] = atv.Type.String() + "=" + atv.Value.(string)
	}
	slices.Sort(out)
	return out
}

// fuzzNow is the time chains are verified at; the seed chains are valid
// from 2020 to 2120.
var fuzzNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// seedChains issues real chains as a CA would for a credential: an RSA
// leaf under an intermediate under a root, an ECDSA pair, and a lone
// self-signed certificate. Leaf first, root last.
func seedChains(f *testing.F) [][]*x509.Certificate {
	f.Helper()
	nb, na := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2120, 1, 1, 0, 0, 0, 0, time.UTC)
	issue := func(subject string, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer, ca bool) *x509.Certificate {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(len(subject))), Subject: pkix.Name{CommonName: subject, Organization: []string{"Example B.V."}, Country: []string{"NL"}},
			NotBefore: nb, NotAfter: na, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment,
		}
		if ca {
			tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		}
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
		if err != nil {
			f.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	interKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	root := issue("Example Root CA", rootKey.Public(), nil, rootKey, true)
	inter := issue("Example Signing CA", interKey.Public(), root, rootKey, true)
	leaf := issue("Alice Jansen", leafKey.Public(), inter, interKey, false)
	ecLeaf := issue("Bob", interKey.Public(), root, rootKey, false)
	return [][]*x509.Certificate{{leaf, inter, root}, {ecLeaf, root}, {root}, {leaf, root}, {inter, leaf, root}}
}

func chainPEM(chain []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range chain {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// checkVerified asserts what verifyChain's acceptance means, independently
// of how it decides: each certificate is issued by the next (issuer name
// and signature), the last is a self-signed root, and all are valid now.
func checkVerified(t *testing.T, chain []*x509.Certificate, now time.Time) {
	t.Helper()
	for i, c := range chain {
		if now.Before(c.NotBefore) || now.After(c.NotAfter) {
			t.Fatalf("certificate %d accepted outside its validity %s–%s", i+1, c.NotBefore, c.NotAfter)
		}
		issuer := c
		if i+1 < len(chain) {
			issuer = chain[i+1]
		}
		if !bytes.Equal(c.RawIssuer, issuer.RawSubject) {
			t.Fatalf("certificate %d is not issued by the next one's subject", i+1)
		}
		if err := issuer.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
			t.Fatalf("certificate %d accepted with a bad signature: %v", i+1, err)
		}
	}
}

// FuzzParseChainPEM parses certificate chains as `signd credential import`
// reads them. An accepted chain has 1 to 10 certificates, each exactly a
// PEM block's bytes, and written back as PEM it parses to the same
// certificates; verifying it never panics, and a chain that verifies is
// ordered, signed and valid (checkVerified).
func FuzzParseChainPEM(f *testing.F) {
	for _, chain := range seedChains(f) {
		f.Add(chainPEM(chain))
	}
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, data []byte) {
		chain, err := ParseChainPEM(data)
		if err != nil {
			if chain != nil || err.Error() == "" {
				t.Fatalf("refusal %v with %d certificates", err, len(chain))
			}
			return
		}
		if len(chain) == 0 || len(chain) > maxChainCerts || len(data) > maxChainPEM {
			t.Fatalf("%d certificates from %d bytes accepted", len(chain), len(data))
		}
		again, err := ParseChainPEM(chainPEM(chain))
		if err != nil || len(again) != len(chain) {
			t.Fatalf("written back: %d certificates, %v", len(again), err)
		}
		for i := range chain {
			if !bytes.Equal(again[i].Raw, chain[i].Raw) {
				t.Fatalf("certificate %d differs after the round trip", i+1)
			}
		}
		if verifyChain(chain, fuzzNow) == nil {
			checkVerified(t, chain, fuzzNow)
		}
	})
}

// FuzzVerifyChain mutates the DER of up to three certificates (leaf,
// intermediate, root) and verifies what parses: never a panic, and a
// chain that verifies is ordered, signed and valid (checkVerified).
func FuzzVerifyChain(f *testing.F) {
	for _, chain := range seedChains(f) {
		ders := [3][]byte{}
		for i, c := range chain[:min(3, len(chain))] {
			ders[i] = c.Raw
		}
		f.Add(ders[0], ders[1], ders[2], int64(0))
		f.Add(ders[0], ders[1], ders[2], int64(100*365*24*3600))
	}
	f.Fuzz(func(t *testing.T, a, b, c []byte, offset int64) {
		var chain []*x509.Certificate
		for _, der := range [][]byte{a, b, c} {
			if len(der) == 0 {
				break
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return
			}
			chain = append(chain, cert)
		}
		if len(chain) == 0 {
			return
		}
		now := fuzzNow.Add(time.Duration(offset%(200*365*24*3600)) * time.Second)
		if err := verifyChain(chain, now); err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		checkVerified(t, chain, now)
	})
}

// FuzzValidateClaims checks identity attributes as `signd user add
// --claims` and the admin API take them. Accepted attributes are known
// keys with printable values of 1–256 bytes (dates as YYYY-MM-DD), pass
// the store's own validation of a user, and are what /userinfo releases
// for the scopes that cover them.
func FuzzValidateClaims(f *testing.F) {
	for _, s := range []string{
		`{"given_name":"Alice","last_name":"Jansen","birthdate":"1990-02-03","birthplace":"Utrecht","nationality":"NL",` +
			`"document_type":"passport","id_number":"NXC8R1234","nl_brp_voornaam":"Alice","nl_brp_voorvoegsel":"van",` +
			`"nl_brp_geslachtsnaam":"van Dam","nl_brp_geslachtsnaam_zonder_voorvoegsel":"Dam",` +
			`"id_document_issuance_date":"2020-12-01","id_document_issuance_place":"Utrecht"}`,
		`{"shoe":"42"}`, `{"given_name":""}`, `{"given_name":"a\nb"}`, `{"birthdate":"1990-02-31"}`,
		`{"birthdate":"03-02-1990"}`, `{"com.vendor.last_name":"J"}`, `{"given_name":"\u00e9l\u00e8ve"}`,
	} {
		f.Add([]byte(s))
	}
	claims := oidc.Claims{Namespace: "com.vendor"}
	scopes := []string{claims.ScopePersonalInfo(), claims.ScopeIDNumber()}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]string
		if json.Unmarshal(data, &m) != nil {
			return
		}
		err := validateClaims(m)
		if err != nil {
			if KindOf(err) != KindInvalid || err.Error() == "" {
				t.Fatalf("%s: %v (kind %s)", data, err, KindOf(err))
			}
			return
		}
		u := &store.User{ID: "u1", Username: "alice", Status: store.UserActive, Claims: m}
		if err := u.Validate(); err != nil {
			t.Fatalf("%s: accepted, but the store refuses the user: %v", data, err)
		}
		released := claims.Identity(u, nil, scopes)
		if len(released) != len(m) {
			t.Fatalf("%s: %d attributes accepted, /userinfo releases %d: %v", data, len(m), len(released), released)
		}
		for k, v := range m {
			if !slices.Contains(ClaimKeys(), k) || len(v) == 0 || len(v) > maxClaimLen {
				t.Fatalf("%s: %q = %q accepted", data, k, v)
			}
			name := claims.Namespace + "." + k
			if k == "given_name" || k == "birthdate" {
				name = k
			}
			if k == "document_type" {
				name = claims.Namespace + ".document.type"
			}
			if released[name] != v {
				t.Fatalf("%s: %q = %q released as %v", data, k, v, released[name])
			}
		}
	})
}

// recordingService is a Service that records the request of each call and
// answers with empty results: FuzzRPC tests the decoding, not the
// operations.
type recordingService struct{ got any }

func (s *recordingService) rec(v any) { s.got = v }

func (s *recordingService) AddUser(_ context.Context, r AddUserRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) ListUsers(context.Context) ([]UserView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) ShowUser(_ context.Context, n string) (*UserView, error) {
	s.rec(nameReq{n})
	return &UserView{}, nil
}
func (s *recordingService) SetUserStatus(_ context.Context, n string, e bool) (*UserView, error) {
	s.rec(statusReq{n, e})
	return &UserView{}, nil
}
func (s *recordingService) UnlockUser(_ context.Context, n string) (*UserView, error) {
	s.rec(nameReq{n})
	return &UserView{}, nil
}
func (s *recordingService) SetPassword(_ context.Context, r SetSecretRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) SetPIN(_ context.Context, r SetSecretRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) AddProof(_ context.Context, r AddProofRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) AddClient(_ context.Context, r AddClientRequest) (*AddClientResult, error) {
	s.rec(r)
	return &AddClientResult{}, nil
}
func (s *recordingService) ListClients(context.Context) ([]ClientView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) ShowClient(_ context.Context, n string) (*ClientView, error) {
	s.rec(nameReq{n})
	return &ClientView{}, nil
}
func (s *recordingService) RemoveClient(_ context.Context, n string) (*RemoveResult, error) {
	s.rec(nameReq{n})
	return &RemoveResult{}, nil
}

func (s *recordingService) RemoveUser(_ context.Context, n string) (*RemoveResult, error) {
	s.rec(nameReq{n})
	return &RemoveResult{}, nil
}

func (s *recordingService) RemoveCredential(_ context.Context, n string) (*RemoveCredentialResult, error) {
	s.rec(nameReq{n})
	return &RemoveCredentialResult{}, nil
}
func (s *recordingService) CreateCredential(_ context.Context, r CreateCredentialRequest) (*CreateCredentialResult, error) {
	s.rec(r)
	return &CreateCredentialResult{}, nil
}
func (s *recordingService) ImportCertificate(_ context.Context, r ImportCertificateRequest) (*CredentialView, error) {
	s.rec(r)
	return &CredentialView{}, nil
}
func (s *recordingService) ListCredentials(_ context.Context, n string) ([]CredentialView, error) {
	s.rec(nameReq{n})
	return nil, nil
}
func (s *recordingService) ShowCredential(_ context.Context, n string) (*CredentialView, error) {
	s.rec(nameReq{n})
	return &CredentialView{}, nil
}
func (s *recordingService) SetCredentialStatus(_ context.Context, n string, e bool) (*CredentialView, error) {
	s.rec(statusReq{n, e})
	return &CredentialView{}, nil
}
func (s *recordingService) CreateOIDCKey(context.Context) (*OIDCKeyView, error) {
	s.rec(struct{}{})
	return &OIDCKeyView{}, nil
}
func (s *recordingService) ListOIDCKeys(context.Context) ([]OIDCKeyView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) RotateOIDCKeys(_ context.Context, r RotateOIDCKeysRequest) (*RotateOIDCKeysResult, error) {
	s.rec(r)
	return &RotateOIDCKeysResult{}, nil
}

// FuzzRPC posts any body to any admin method of the admin socket's
// handler. The answer is 200, or 400 invalid / 404 unknown method with a
// message, never a 5xx. A call reaches the service only with a body that
// is exactly one JSON value naming only fields of the method's request,
// and the service gets what encoding/json reads from it; Remote's own
// encoding of that request decodes to the same request (round trip).
func FuzzRPC(f *testing.F) {
	svc := &recordingService{}
	e := echo.New()
	if err := (&Handler{Service: svc}).Mount(e.Group("")); err != nil {
		f.Fatal(err)
	}
	types := map[string]reflect.Type{}
	for name, v := range map[string]any{
		"AddUser": AddUserRequest{}, "ListUsers": struct{}{}, "ShowUser": nameReq{}, "SetUserStatus": statusReq{},
		"UnlockUser": nameReq{}, "SetPassword": SetSecretRequest{}, "SetPIN": SetSecretRequest{}, "AddProof": AddProofRequest{},
		"AddClient": AddClientRequest{}, "ListClients": struct{}{}, "ShowClient": nameReq{}, "RemoveClient": nameReq{},
		"CreateCredential": CreateCredentialRequest{}, "ImportCertificate": ImportCertificateRequest{},
		"ListCredentials": nameReq{}, "ShowCredential": nameReq{}, "SetCredentialStatus": statusReq{},
		"CreateOIDCKey": struct{}{}, "ListOIDCKeys": struct{}{}, "RotateOIDCKeys": RotateOIDCKeysRequest{},
		"RemoveUser": nameReq{}, "RemoveCredential": nameReq{},
	} {
		types[name] = reflect.TypeOf(v)
	}
	if len(types) != len(endpoints(svc)) {
		f.Fatalf("the fuzz target knows %d methods, the handler %d", len(types), len(endpoints(svc)))
	}
	// What Remote sends for each method.
	for _, s := range []struct {
		method string
		req    any
	}{
		{"AddUser", AddUserRequest{Username: "alice", Password: "correct horse", PIN: "1234", Email: "alice@example.com", EmailVerified: true, Claims: map[string]string{"given_name": "Alice"}}},
		{"ListUsers", struct{}{}}, {"ShowUser", nameReq{"alice"}}, {"SetUserStatus", statusReq{"alice", true}},
		{"SetPIN", SetSecretRequest{"alice", "4321"}}, {"AddProof", AddProofRequest{"alice", "passport", "application/pdf", []byte("%PDF-1.7")}},
		{"AddClient", AddClientRequest{ID: "rp", Name: "RP", RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"service", "credential"}, RequirePKCE: true}},
		{"CreateCredential", CreateCredentialRequest{User: "alice", Algo: "rsa-3072", Subject: "CN=Alice,O=Example B.V.,C=NL"}},
		{"ImportCertificate", ImportCertificateRequest{ID: "kr3e3rdpe6muvlifxu2m3wpecu", ChainPEM: "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"}},
		{"SetCredentialStatus", statusReq{"kr3e3rdpe6muvlifxu2m3wpecu", false}}, {"RotateOIDCKeys", RotateOIDCKeysRequest{Force: true}},
	} {
		body, _ := json.Marshal(s.req)
		f.Add(s.method, body)
	}
	f.Add("ShowUser", []byte(`{"Name":"alice","Extra":1}`))
	f.Add("ShowUser", []byte(`{"Name":"alice"} {"Name":"root"}`))
	f.Add("ShowUser", []byte(`null`))
	f.Add("NoSuchMethod", []byte(`{}`))
	f.Fuzz(func(t *testing.T, method string, body []byte) {
		if strings.Contains(method, "/") || method == "" {
			return // not one path segment
		}
		svc.got = nil
		req := httptest.NewRequest(http.MethodPost, rpcPrefix, bytes.NewReader(body))
		req.URL = &url.URL{Path: rpcPrefix + method}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		typ, known := types[method]
		if rec.Code != http.StatusOK {
			var ae Error
			if json.Unmarshal(rec.Body.Bytes(), &ae) != nil || ae.Kind != KindInvalid || ae.Message == "" || svc.got != nil ||
				(rec.Code != http.StatusBadRequest || !known) && (rec.Code != http.StatusNotFound || known) {
				t.Fatalf("%s %q: %d %s", method, body, rec.Code, rec.Body)
			}
			return
		}
		if !known || svc.got == nil {
			t.Fatalf("%s %q: 200 without a call", method, body)
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		var first json.RawMessage
		if err := dec.Decode(&first); err != nil || dec.More() || !json.Valid(body) {
			t.Fatalf("%s %q: accepted, but the body is not exactly one JSON value", method, body)
		}
		ref := reflect.New(typ)
		if err := json.Unmarshal(body, ref.Interface()); err != nil || !reflect.DeepEqual(ref.Elem().Interface(), svc.got) {
			t.Fatalf("%s %q: the service got %+v, encoding/json reads %+v (%v)", method, body, svc.got, ref.Elem().Interface(), err)
		}
		// Round trip: what Remote would send for this request.
		sent, err := json.Marshal(svc.got)
		if err != nil {
			t.Fatalf("%s: %+v does not encode: %v", method, svc.got, err)
		}
		got := svc.got
		svc.got = nil
		rec = httptest.NewRecorder()
		req = httptest.NewRequest(http.MethodPost, rpcPrefix, bytes.NewReader(sent))
		req.URL = &url.URL{Path: rpcPrefix + method}
		e.ServeHTTP(rec, req)
		again, _ := json.Marshal(svc.got)
		if rec.Code != http.StatusOK || !bytes.Equal(again, sent) {
			t.Fatalf("%s %+v: sent as %s, decoded as %s (%d)", method, got, sent, again, rec.Code)
		}
	})
}

package signhash

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// Algorithm OIDs of signHash (signAlgo, hashAlgo) and credentials/info
// (key.algo, key.curve).
const (
	oidRSAEncryption   = "1.2.840.113549.1.1.1"  // RFC 8017 A.1: with hashAlgo
	OIDRSASSAPSS       = "1.2.840.113549.1.1.10" // RFC 8017 A.2.3: with signAlgoParams
	oidSHA256WithRSA   = "1.2.840.113549.1.1.11"
	oidSHA384WithRSA   = "1.2.840.113549.1.1.12"
	oidSHA512WithRSA   = "1.2.840.113549.1.1.13"
	oidECDSAWithSHA256 = "1.2.840.10045.4.3.2" // RFC 5758 §3.2
	oidECDSAWithSHA384 = "1.2.840.10045.4.3.3"
	oidECDSAWithSHA512 = "1.2.840.10045.4.3.4"
	oidSHA256          = "2.16.840.1.101.3.4.2.1"
	oidSHA384          = "2.16.840.1.101.3.4.2.2"
	oidSHA512          = "2.16.840.1.101.3.4.2.3"
	oidP256            = "1.2.840.10045.3.1.7" // RFC 5480 §2.1.1.1 secp256r1
	oidP384            = "1.3.132.0.34"        // secp384r1
	oidP521            = "1.3.132.0.35"        // secp521r1
	oidMGF1            = "1.2.840.113549.1.1.8"
	derNullBase64      = "BQA=" // signAlgoParams of algorithms without parameters
)

// hashByOID are the hashes signd signs: nothing weaker than SHA-256.
var hashByOID = map[string]crypto.Hash{oidSHA256: crypto.SHA256, oidSHA384: crypto.SHA384, oidSHA512: crypto.SHA512}

// signAlgoDef is what a signAlgo OID means.
type signAlgoDef struct {
	ec     bool        // ECDSA (an EC key); else RSA
	hash   crypto.Hash // implied hash; 0: from hashAlgo (rsaEncryption) or signAlgoParams (PSS)
	pss    bool
	nullOK bool // signAlgoParams may be DER NULL (RSA PKCS#1 v1.5: RFC 8017 A.2.4)
}

var signAlgos = map[string]signAlgoDef{
	oidRSAEncryption:   {nullOK: true},
	OIDRSASSAPSS:       {pss: true},
	oidSHA256WithRSA:   {hash: crypto.SHA256, nullOK: true},
	oidSHA384WithRSA:   {hash: crypto.SHA384, nullOK: true},
	oidSHA512WithRSA:   {hash: crypto.SHA512, nullOK: true},
	oidECDSAWithSHA256: {ec: true, hash: crypto.SHA256},
	oidECDSAWithSHA384: {ec: true, hash: crypto.SHA384},
	oidECDSAWithSHA512: {ec: true, hash: crypto.SHA512},
}

// keyAlgos are credentials/info's key.algo: the signAlgo OIDs a key can
// do, rsaEncryption and sha256WithRSAEncryption first for an RSA key.
var (
	rsaKeyAlgos = []string{oidRSAEncryption, oidSHA256WithRSA, oidSHA384WithRSA, oidSHA512WithRSA, OIDRSASSAPSS}
	ecKeyAlgos  = []string{oidECDSAWithSHA256, oidECDSAWithSHA384, oidECDSAWithSHA512}
)

// KeyAlgoInfo returns key.algo and key.curve of a credential algorithm.
func KeyAlgoInfo(algorithm string) (algos []string, curve string) {
	switch algorithm {
	case store.AlgECP256:
		return slices.Clone(ecKeyAlgos), oidP256
	case store.AlgECP384:
		return slices.Clone(ecKeyAlgos), oidP384
	case store.AlgECP521:
		return slices.Clone(ecKeyAlgos), oidP521
	}
	return slices.Clone(rsaKeyAlgos), ""
}

// signAlgo is the negotiated algorithm of a signHash request.
type signAlgo struct {
	oid  string
	ec   bool
	opts crypto.SignerOpts // crypto.Hash, or *rsa.PSSOptions for RSASSA-PSS
}

// fits reports whether the credential's key (its store algorithm) can make
// signatures of a.
func (a signAlgo) fits(algorithm string) bool { return a.ec == store.AlgorithmIsEC(algorithm) }

// Descriptions of signAlgoParams refusals: the specification's "Invalid
// parameter signAlgoParams" and what is wrong with RSASSA-PSS-params.
const (
	descPSSParamsDER     = "Invalid parameter signAlgoParams: not a base64 DER RSASSA-PSS-params"
	descPSSParamsHash    = "Invalid parameter signAlgoParams: the hash must be SHA-256, SHA-384 or SHA-512"
	descPSSParamsMGF     = "Invalid parameter signAlgoParams: the mask generation function must be MGF1 with the signature's hash"
	descPSSParamsSalt    = "Invalid parameter signAlgoParams: the salt length must equal the hash length"
	descPSSParamsTrailer = "Invalid parameter signAlgoParams: the trailer field must be 1"
)

// parseSignAlgo reads signAlgo, hashAlgo and signAlgoParams (CSC v1 §11.9):
// signAlgo must be one of signAlgos; hashAlgo is required with
// rsaEncryption and, when present, must name the hash the signature uses;
// signAlgoParams is required with RSASSA-PSS (RFC 8017 A.2.3: SHA-256, -384
// or -512, MGF1 with the same hash, a salt of the hash's length or of the
// key's maximum (checked by fitsKey), trailer 1), may be DER NULL with
// the RSA PKCS#1 v1.5 OIDs and is refused otherwise.
func parseSignAlgo(p protocol.Params) (signAlgo, *oauth.Error) {
	oid, _, e := p.Str("signAlgo", true)
	if e != nil {
		return signAlgo{}, e
	}
	hashAlgo, hasHashAlgo, e := p.Str("hashAlgo", oid == oidRSAEncryption)
	if e != nil {
		return signAlgo{}, e
	}
	def, ok := signAlgos[oid]
	if !ok {
		return signAlgo{}, protocol.Invalid("signAlgo")
	}
	var named crypto.Hash
	if hasHashAlgo {
		if named, ok = hashByOID[hashAlgo]; !ok {
			return signAlgo{}, protocol.Invalid("hashAlgo")
		}
	}
	hash := def.hash
	if hash == 0 && !def.pss { // rsaEncryption
		hash = named
	}
	if hasHashAlgo && !def.pss && named != hash {
		return signAlgo{}, protocol.Invalid("hashAlgo")
	}
	params, hasParams, e := p.Str("signAlgoParams", def.pss)
	if e != nil {
		return signAlgo{}, e
	}
	salt := 0
	switch {
	case def.pss:
		if hash, salt, e = parsePSSParams(params); e != nil {
			return signAlgo{}, e
		}
		if hasHashAlgo && named != hash {
			return signAlgo{}, protocol.Invalid("hashAlgo")
		}
	case hasParams && params != "" && (!def.nullOK || params != derNullBase64):
		return signAlgo{}, protocol.Invalid("signAlgoParams")
	}
	a := signAlgo{oid: oid, ec: def.ec, opts: hash}
	if def.pss {
		a.opts = &rsa.PSSOptions{SaltLength: salt, Hash: hash}
	}
	return a, nil
}

// pssParameters is RSASSA-PSS-params (RFC 8017 A.2.3, RFC 4055 §3.1).
// Absent fields take the ASN.1 defaults (SHA-1, MGF1 with SHA-1, salt 20,
// trailer 1), which signd then refuses but for the trailer.
type pssParameters struct {
	Hash         pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:0"`
	MGF          pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:1"`
	SaltLength   int                      `asn1:"optional,explicit,tag:2,default:20"`
	TrailerField int                      `asn1:"optional,explicit,tag:3,default:1"`
}

// parsePSSParams checks base64 DER RSASSA-PSS-params and returns its hash
// and salt length. The hash identifiers may carry NULL parameters or none
// (RFC 4055 §2.1). A salt longer than the hash is the key's maximum or
// nothing: fitsKey decides once the key is known.
func parsePSSParams(b64 string) (crypto.Hash, int, *oauth.Error) {
	der, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || len(der) == 0 || len(der) > 256 {
		return 0, 0, protocol.BadRequest(descPSSParamsDER)
	}
	var p pssParameters
	if rest, err := asn1.Unmarshal(der, &p); err != nil || len(rest) != 0 {
		return 0, 0, protocol.BadRequest(descPSSParamsDER)
	}
	hash, ok := hashByOID[p.Hash.Algorithm.String()]
	if !ok || !nullOrAbsent(p.Hash.Parameters) {
		return 0, 0, protocol.BadRequest(descPSSParamsHash)
	}
	if p.MGF.Algorithm.String() != oidMGF1 {
		return 0, 0, protocol.BadRequest(descPSSParamsMGF)
	}
	var mgfHash pkix.AlgorithmIdentifier
	if rest, err := asn1.Unmarshal(p.MGF.Parameters.FullBytes, &mgfHash); err != nil || len(rest) != 0 ||
		mgfHash.Algorithm.String() != p.Hash.Algorithm.String() || !nullOrAbsent(mgfHash.Parameters) {
		return 0, 0, protocol.BadRequest(descPSSParamsMGF)
	}
	if p.SaltLength < hash.Size() {
		return 0, 0, protocol.BadRequest(descPSSParamsSalt)
	}
	if p.TrailerField != 1 {
		return 0, 0, protocol.BadRequest(descPSSParamsTrailer)
	}
	return hash, p.SaltLength, nil
}

// saltRefusal refuses an RSASSA-PSS salt that is neither the hash length
// nor the longest a key of bits allows (RFC 8017 §9.1.1: the encoded
// message length minus the hash length minus 2, what pyHanko asks), or
// returns nil. The refusal names the hash length only, the salt every
// client can choose.
func (a signAlgo) saltRefusal(bits int) *oauth.Error {
	p, ok := a.opts.(*rsa.PSSOptions)
	if !ok {
		return nil
	}
	h := p.Hash.Size()
	maxSalt := (bits-1+7)/8 - h - 2
	if p.SaltLength == h || p.SaltLength == maxSalt {
		return nil
	}
	return protocol.BadRequest(descPSSParamsSalt)
}

// nullOrAbsent reports whether AlgorithmIdentifier parameters are absent
// or NULL.
func nullOrAbsent(v asn1.RawValue) bool {
	return len(v.FullBytes) == 0 || v.Tag == asn1.TagNull && v.Class == asn1.ClassUniversal && len(v.Bytes) == 0
}

// wrongKeyAlgo refuses a signAlgo the credential's key cannot do: an ECDSA
// OID for an RSA key or an RSA one for an EC key.
func wrongKeyAlgo(algorithm string) *oauth.Error {
	kind := "RSA"
	if store.AlgorithmIsEC(algorithm) {
		kind = "EC"
	}
	return protocol.BadRequest(fmt.Sprintf("Invalid parameter signAlgo: the credential's key is %s", kind))
}

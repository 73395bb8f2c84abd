package certstatus

import (
	"bytes"
	"crypto"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
	"golang.org/x/crypto/ocsp"
)

// certIDHashes are the OIDs of the CertID hash algorithms (RFC 6960
// §4.1.1, the hashAlgorithm of a CertID), by the crypto.Hash that
// ocsp.ParseRequest reports.
var certIDHashes = map[crypto.Hash]asn1.ObjectIdentifier{
	crypto.SHA1:   {1, 3, 14, 3, 2, 26},
	crypto.SHA256: {2, 16, 840, 1, 101, 3, 4, 2, 1},
	crypto.SHA384: {2, 16, 840, 1, 101, 3, 4, 2, 2},
	crypto.SHA512: {2, 16, 840, 1, 101, 3, 4, 2, 3},
}

// matchCertID checks that the single response of the OCSP response resp
// that ocsp.ParseResponseForCert took (the first whose serial number is
// serial) names the issuer that the request req asked about: its CertID's
// hashAlgorithm, issuerNameHash and issuerKeyHash are the request's (RFC
// 6960 §4.1.1, §4.2.1). The library matches by serial number alone, so
// that without this check a "good" its signer gave about the same serial
// number of another CA (a responder key shared across CAs) would be taken.
func matchCertID(resp, req []byte, serial *big.Int) error {
	r, err := ocsp.ParseRequest(req)
	if err != nil {
		return fmt.Errorf("the request's CertID: %w", err)
	}
	wantAlg, ok := certIDHashes[r.HashAlgorithm]
	if !ok {
		return fmt.Errorf("the request's CertID: hash %v", r.HashAlgorithm)
	}
	singles, err := singleResponses(resp)
	if err != nil {
		return fmt.Errorf("response: %w", err)
	}
	for len(singles) > 0 {
		var single, id, alg cryptobyte.String
		var oid asn1.ObjectIdentifier
		var nameHash, keyHash []byte
		n := new(big.Int)
		if !singles.ReadASN1(&single, cbasn1.SEQUENCE) || !single.ReadASN1(&id, cbasn1.SEQUENCE) ||
			!id.ReadASN1(&alg, cbasn1.SEQUENCE) || !alg.ReadASN1ObjectIdentifier(&oid) ||
			!id.ReadASN1Bytes(&nameHash, cbasn1.OCTET_STRING) || !id.ReadASN1Bytes(&keyHash, cbasn1.OCTET_STRING) ||
			!id.ReadASN1Integer(n) || !id.Empty() {
			return errors.New("response: malformed SingleResponse")
		}
		if n.Cmp(serial) != 0 {
			continue
		}
		if !oid.Equal(wantAlg) || !bytes.Equal(nameHash, r.IssuerNameHash) || !bytes.Equal(keyHash, r.IssuerKeyHash) {
			return errors.New("the response is about another issuer's certificate of this serial number (CertID issuer hashes differ)")
		}
		return nil
	}
	return errors.New("no response for the certificate")
}

// singleResponses returns the contents of the responses SEQUENCE of a
// basic OCSP response (RFC 6960 §4.2.1):
//
//	OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED,
//	    responseBytes [0] EXPLICIT SEQUENCE { responseType OID, response OCTET STRING } OPTIONAL }
//	BasicOCSPResponse ::= SEQUENCE { tbsResponseData ResponseData, ... }
//	ResponseData ::= SEQUENCE { version [0] EXPLICIT Version DEFAULT v1,
//	    responderID ResponderID, producedAt GeneralizedTime,
//	    responses SEQUENCE OF SingleResponse, ... }
func singleResponses(der []byte) (cryptobyte.String, error) {
	in := cryptobyte.String(der)
	var outer, status, wrapped, rb, typ, basicDER, basic, tbs, responderID, produced, singles cryptobyte.String
	if !in.ReadASN1(&outer, cbasn1.SEQUENCE) || !outer.ReadASN1(&status, cbasn1.ENUM) ||
		!outer.ReadASN1(&wrapped, cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!wrapped.ReadASN1(&rb, cbasn1.SEQUENCE) || !rb.ReadASN1(&typ, cbasn1.OBJECT_IDENTIFIER) ||
		!rb.ReadASN1(&basicDER, cbasn1.OCTET_STRING) {
		return nil, errors.New("malformed OCSPResponse")
	}
	if !basicDER.ReadASN1(&basic, cbasn1.SEQUENCE) || !basic.ReadASN1(&tbs, cbasn1.SEQUENCE) ||
		!tbs.SkipOptionalASN1(cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!tbs.ReadAnyASN1Element(&responderID, nil) || !tbs.ReadASN1(&produced, cbasn1.GeneralizedTime) ||
		!tbs.ReadASN1(&singles, cbasn1.SEQUENCE) {
		return nil, errors.New("malformed BasicOCSPResponse")
	}
	return singles, nil
}

package protocol

import (
	"crypto"
	"encoding/base64"
	"encoding/hex"

	"github.com/signd/signd/oauth"
)

// DecodeBase64 decodes standard base64 (RFC 4648 §4), padded or not; the
// URL-safe alphabet and line breaks are refused.
func DecodeBase64(s string) ([]byte, error) {
	if len(s)%4 == 0 {
		return base64.StdEncoding.Strict().DecodeString(s)
	}
	return base64.RawStdEncoding.Strict().DecodeString(s)
}

// DigestSize reports whether n bytes is the size of a digest of one of
// the hashes signd signs (32, 48 or 64: SHA-256, SHA-384, SHA-512). A SAD
// is bound to digests of these sizes, whichever way it is authorized;
// signHash then requires the size of its signature algorithm's hash.
func DigestSize(n int) bool {
	return n == crypto.SHA256.Size() || n == crypto.SHA384.Size() || n == crypto.SHA512.Size()
}

// HashArray reads the required hash array of signHash, credentials/authorize
// and extendTransaction: at most maxHashes standard base64 SHA-256, SHA-384
// or SHA-512 digests (DigestSize), in request order; signHash then checks
// them against its signature algorithm. read is how many entries were
// looked at, one past maxHashes when there are more (signHash's audit
// entry counts them); entries past that are not even looked at.
func HashArray(p Params, maxHashes int) (hashes [][]byte, read int, e *oauth.Error) {
	if p.Kind("hash") != '[' {
		return nil, 0, Missing("array", "hash")
	}
	elems, more := ArrayElems(p["hash"], maxHashes)
	read = len(elems)
	if more {
		return nil, read + 1, TooManyHashes(maxHashes)
	}
	if len(elems) == 0 {
		return nil, 0, BadRequest(DescEmptyHash)
	}
	hashes = make([][]byte, 0, len(elems))
	for _, el := range elems {
		s, ok := JSONString(el)
		if !ok {
			return nil, read, BadRequest(DescBadBase64)
		}
		d, err := DecodeBase64(s)
		if err != nil {
			return nil, read, BadRequest(DescBadBase64)
		}
		if !DigestSize(len(d)) {
			return nil, read, BadRequest(DescDigestLength)
		}
		hashes = append(hashes, d)
	}
	return hashes, read, nil
}

// HexHashes is how audit entries list digests: lower-case hex.
func HexHashes(hashes [][]byte) []string {
	out := make([]string, len(hashes))
	for i, d := range hashes {
		out[i] = hex.EncodeToString(d)
	}
	return out
}

package enroll

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// dnAttrs are the attribute types ParseDN accepts, by their RFC 4514 short
// names (case-insensitive).
var dnAttrs = map[string]asn1.ObjectIdentifier{
	"CN":           {2, 5, 4, 3},
	"SURNAME":      {2, 5, 4, 4},
	"SN":           {2, 5, 4, 4},
	"SERIALNUMBER": {2, 5, 4, 5},
	"C":            {2, 5, 4, 6},
	"L":            {2, 5, 4, 7},
	"ST":           {2, 5, 4, 8},
	"STREET":       {2, 5, 4, 9},
	"O":            {2, 5, 4, 10},
	"OU":           {2, 5, 4, 11},
	"TITLE":        {2, 5, 4, 12},
	"POSTALCODE":   {2, 5, 4, 17},
	"GIVENNAME":    {2, 5, 4, 42},
}

const maxDNLen = 1024

// ParseDN parses a distinguished name in RFC 4514 string form such as
// "CN=Alice Jansen,O=Example B.V.,C=NL". Values may escape special
// characters with a backslash. Multi-valued RDNs ("+") are not accepted.
func ParseDN(s string) (pkix.Name, error) {
	var name pkix.Name
	if strings.TrimSpace(s) == "" {
		return name, errors.New("empty distinguished name")
	}
	if len(s) > maxDNLen {
		return name, fmt.Errorf("distinguished name longer than %d bytes", maxDNLen)
	}
	if !utf8.ValidString(s) { // a subject's strings are UTF8String or PrintableString
		return name, errors.New("distinguished name is not valid UTF-8")
	}
	rdns, err := splitUnescaped(s, ',')
	if err != nil {
		return name, err
	}
	var seq pkix.RDNSequence
	seen := map[string]bool{}
	for _, rdn := range rdns {
		if _, err := splitUnescaped(rdn, '+'); err != nil {
			return name, err
		}
		if strings.Contains(unescapedOnly(rdn), "+") {
			return name, fmt.Errorf("multi-valued RDN %q is not supported", rdn)
		}
		typ, val, ok := strings.Cut(rdn, "=")
		if !ok {
			return name, fmt.Errorf("%q is not TYPE=value", strings.TrimSpace(rdn))
		}
		typ = strings.ToUpper(strings.TrimSpace(typ))
		oid, ok := dnAttrs[typ]
		if !ok {
			return name, fmt.Errorf("attribute type %q is not supported (use CN, O, OU, C, L, ST, STREET, POSTALCODE, SERIALNUMBER, GIVENNAME, SURNAME, TITLE)", typ)
		}
		v, err := unescapeDNValue(trimDNSpace(val))
		if err != nil {
			return name, err
		}
		if v == "" {
			return name, fmt.Errorf("attribute %s has an empty value", typ)
		}
		// pkix.Name holds one CN and one serial number: a second one would
		// silently replace the first in the certificate subject.
		if (typ == "CN" || typ == "SERIALNUMBER") && seen[typ] {
			return name, fmt.Errorf("attribute %s is given twice; a subject here has at most one", typ)
		}
		seen[typ] = true
		if typ == "C" && (len(v) != 2 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "") { // ISO 3166-1 alpha-2
			return name, fmt.Errorf("the country (C) must be a two-letter upper-case code, got %q", v)
		}
		seq = append(seq, pkix.RelativeDistinguishedNameSET{{Type: oid, Value: v}})
	}
	name.FillFromRDNSequence(&seq)
	// FillFromRDNSequence leaves unknown attributes (GIVENNAME, SURNAME,
	// TITLE) only in Names; carry them over so they are encoded.
	for _, atv := range name.Names {
		if !standardAttr(atv.Type) {
			name.ExtraNames = append(name.ExtraNames, atv)
		}
	}
	return name, nil
}

func standardAttr(oid asn1.ObjectIdentifier) bool {
	if len(oid) != 4 || oid[0] != 2 || oid[1] != 5 || oid[2] != 4 {
		return false
	}
	switch oid[3] {
	case 3, 5, 6, 7, 8, 9, 10, 11, 17:
		return true
	}
	return false
}

// splitUnescaped splits s on sep where sep is not escaped by a backslash.
func splitUnescaped(s string, sep byte) ([]string, error) {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New("distinguished name ends in a lone backslash")
			}
			i++
		case sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:]), nil
}

// unescapedOnly drops escaped characters, leaving what is syntax.
func unescapedOnly(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// trimDNSpace removes the spaces around a value (RFC 4514 §3 allows them
// around '=' and ','), but not an escaped space ("\ ") at its end.
func trimDNSpace(v string) string {
	v = strings.TrimLeft(v, " ")
	for strings.HasSuffix(v, " ") {
		backslashes := len(v) - 1 - len(strings.TrimRight(v[:len(v)-1], `\`))
		if backslashes%2 == 1 {
			break
		}
		v = v[:len(v)-1]
	}
	return v
}

// unescapeDNValue decodes an RFC 4514 §3 value: a backslash before one of
// the characters `"+,;<>\ #=` stands for that character, and a backslash
// before two hex digits for that byte (so a UTF-8 text may be written byte
// by byte: Jos\C3\A9). Any other escape is refused, as are a bare one of
// `";<>` (RFC 4514 §2.4 has them escaped), a value starting
// with an unescaped # (the hex-encoded BER form, which subjects here do
// not take), a control character however written, and bytes that are not
// UTF-8.
func unescapeDNValue(v string) (string, error) {
	if strings.HasPrefix(v, "#") {
		return "", errors.New(`a value in #hex (BER) form is not supported: write the text, with \# for a leading #`)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c == 0x7f {
			return "", errors.New("distinguished name contains a control character")
		}
		if strings.IndexByte(`";<>`, c) >= 0 {
			// RFC 4514 §2.4: written back, it is escaped; taken bare, a
			// subject could grow past maxDNLen on its way back.
			return "", fmt.Errorf(`%q must be escaped with a backslash (RFC 4514 §2.4)`, c)
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		switch {
		case i >= len(v):
			return "", errors.New("distinguished name ends in a lone backslash")
		case v[i] < 0x20 || v[i] == 0x7f: // escaping does not make it printable
			return "", errors.New("distinguished name contains a control character")
		case strings.IndexByte(`"+,;<>\ #=`, v[i]) >= 0:
			b.WriteByte(v[i])
		case i+1 < len(v) && isHex(v[i]) && isHex(v[i+1]):
			x, _ := strconv.ParseUint(v[i:i+2], 16, 8)
			if x < 0x20 || x == 0x7f {
				return "", errors.New("distinguished name contains a control character")
			}
			b.WriteByte(byte(x))
			i++
		default:
			r, _ := utf8.DecodeRuneInString(v[i:])
			return "", fmt.Errorf(`"\%c" is not an escape of RFC 4514: a backslash goes before one of "+,;<>\ #= or two hex digits`, r)
		}
	}
	if !utf8.ValidString(b.String()) {
		return "", errors.New("distinguished name is not valid UTF-8 (a hex escape gave bytes that are not)")
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// escapeDNValue escapes the RFC 4514 §2.4 special characters of a value:
// ParseDN reads what it writes back to the same value.
func escapeDNValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case strings.IndexByte(`,+"\<>;=`, c) >= 0,
			i == 0 && (c == ' ' || c == '#'),
			i == len(v)-1 && c == ' ':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

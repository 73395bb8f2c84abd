package csc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/signd/signd/oauth"
)

// maxBody is the largest CSC request body. The largest legitimate one, a
// signHash with a few hashes, is well under 1 KiB.
const maxBody = 64 << 10

// maxDepth bounds JSON nesting; CSC requests nest two levels at most.
const maxDepth = 16

// params is a parsed request body: each top-level member, undecoded. It is
// built only from a body that is one JSON object without duplicate keys at
// any level.
type params map[string]json.RawMessage

// readParams reads and checks the body of a CSC request. The Content-Type
// must be application/json (a charset parameter, if any, must be UTF-8).
// An empty body (no bytes at all) stands for {} — nothing in it can be
// misread — whatever the Content-Type, unless one other than JSON is
// declared. White space alone is a body, and not JSON.
func readParams(r *http.Request) (params, *oauth.Error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, badRequest(descBodyTooLarge)
		}
		return nil, badRequest(descMalformedJSON)
	}
	if len(body) > maxBody {
		return nil, badRequest(descBodyTooLarge)
	}
	empty := len(body) == 0
	ct := r.Header.Get("Content-Type")
	if ct == "" && !empty || ct != "" && !isJSON(ct) {
		return nil, badRequest(descContentType)
	}
	if empty {
		return params{}, nil
	}
	return parseObject(body)
}

func isJSON(ct string) bool {
	mt, ps, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := ps["charset"]
	return !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8")
}

// parseObject splits a body that must be one JSON object into its members.
// The body is validated first (json.Valid: UTF-8, syntax, a single value),
// so the split below walks known-good JSON; only member values that hold an
// object get the slower nested duplicate-key walk.
func parseObject(body []byte) (params, *oauth.Error) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return nil, badRequest(descMalformedJSON)
	}
	b := bytes.TrimSpace(body)
	if b[0] != '{' {
		return nil, badRequest(descNotObject)
	}
	p := make(params, 8)
	i := skipSpace(b, 1)
	for b[i] != '}' {
		end := stringEnd(b, i)
		key, err := unquote(b[i:end])
		if err != nil {
			return nil, badRequest(descMalformedJSON)
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // ':'
		vend := valueEnd(b, i)
		v := b[i:vend]
		if _, dup := p[key]; dup {
			return nil, badRequest("Duplicate parameter " + paramName(key))
		}
		if (v[0] == '{' || v[0] == '[') && bytes.IndexByte(v, '{') >= 0 {
			if e := checkNested(v); e != nil {
				return nil, e
			}
		}
		p[key] = json.RawMessage(v)
		i = skipSpace(b, vend)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return p, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the closing quote of the string that
// starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return len(b)
}

// arrayElems returns the elements of v, a valid JSON array, undecoded, but
// at most limit of them: more reports that the array has another element,
// and nothing past it is looked at.
func arrayElems(v []byte, limit int) (elems [][]byte, more bool) {
	i := skipSpace(v, 1)
	for i < len(v) && v[i] != ']' {
		if len(elems) == limit {
			return elems, true
		}
		end := valueEnd(v, i)
		elems = append(elems, v[i:end])
		i = skipSpace(v, end)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
	return elems, false
}

// unquote decodes a JSON string literal.
func unquote(lit []byte) (string, error) {
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err
}

// checkNested refuses a JSON value (valid, an object or array) nested more
// than maxDepth deep or in which an object repeats a key (compared after
// unescaping, so "a" and "\u0061" are the same key).
func checkNested(body []byte) *oauth.Error {
	type frame struct {
		obj       bool
		expectKey bool
		keys      map[string]struct{}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].expectKey = true
		}
	}
	for first := true; first || len(stack) > 0; first = false {
		tok, err := dec.Token()
		if err != nil {
			return badRequest(descMalformedJSON)
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].expectKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			key, ok := tok.(string)
			if !ok {
				return badRequest(descMalformedJSON)
			}
			if _, dup := stack[n-1].keys[key]; dup {
				return badRequest("Duplicate parameter " + paramName(key))
			}
			stack[n-1].keys[key] = struct{}{}
			stack[n-1].expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxDepth {
				return badRequest(descMalformedJSON)
			}
			obj := tok == json.Delim('{')
			f := frame{obj: obj, expectKey: obj}
			if obj {
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest(descMalformedJSON)
	}
	return nil
}

// has reports whether name is present and not null.
func (p params) has(name string) bool {
	v, ok := p[name]
	return ok && string(v) != "null"
}

// kind returns the JSON type of a member: '"', '{', '[', 't'/'f', 'n' or a
// number's first byte; 0 when absent.
func (p params) kind(name string) byte {
	v, ok := p[name]
	if !ok || len(v) == 0 {
		return 0
	}
	return v[0]
}

// str returns a string member. ok is false when it is absent or null; e is
// set when it is present but not a string, or required and absent or
// empty.
func (p params) str(name string, required bool) (s string, ok bool, e *oauth.Error) {
	if !p.has(name) {
		if required {
			return "", false, missing("string", name)
		}
		return "", false, nil
	}
	if p.kind(name) != '"' || json.Unmarshal(p[name], &s) != nil {
		return "", false, missing("string", name)
	}
	if s == "" && required {
		return "", false, missing("string", name)
	}
	return s, true, nil
}

// boolean returns a boolean member, def when absent or null.
func (p params) boolean(name string, def bool) (bool, *oauth.Error) {
	if !p.has(name) {
		return def, nil
	}
	switch string(p[name]) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, missing("boolean", name)
}

// positiveInt returns an integer member given as a JSON number or as a
// string of decimal digits (the specification declares maxResults a
// string, its sample sends a number). ok is false when absent or null.
func (p params) positiveInt(name string) (n int, ok bool, e *oauth.Error) {
	if !p.has(name) {
		return 0, false, nil
	}
	raw := string(p[name])
	switch k := p.kind(name); {
	case k == '"':
		var s string
		if json.Unmarshal(p[name], &s) != nil {
			return 0, false, missing("integer", name)
		}
		raw = s
	case k == '-' || k >= '0' && k <= '9':
	default:
		return 0, false, missing("integer", name)
	}
	if raw == "" || strings.TrimLeft(raw, "0123456789") != "" {
		return 0, false, invalid(name)
	}
	if digits := strings.TrimLeft(raw, "0"); len(digits) > 9 {
		return 1 << 30, true, nil // "too large" means the server's maximum
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, false, invalid(name)
	}
	return n, true, nil
}

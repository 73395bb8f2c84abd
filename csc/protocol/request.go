package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
)

// MaxBody is the largest CSC request body. The largest legitimate one, a
// signHash with a few hashes, is well under 1 KiB.
const MaxBody = 64 << 10

// maxDepth bounds JSON nesting inside a member of the body; CSC requests
// nest two levels at most.
const maxDepth = 16

// Params is a parsed request body: each top-level member, undecoded. It is
// built only from a body that is one JSON object without duplicate keys at
// any level.
type Params map[string]json.RawMessage

// ParseRequest is the common opening of a bearer-authenticated CSC method:
// the bearer's grant, and the body (ReadParams) parsed by parse into the
// method's request value, which parse checks in the method's fixed order.
// On a refusal req holds what parse read before it (signHash audits it).
func ParseRequest[R any](c echo.Context, parse func(Params) (R, *oauth.Error)) (g *oauth.Grant, req R, e *oauth.Error) {
	g = oauth.GrantFrom(c)
	p, e := ReadParams(c.Request())
	if e != nil {
		return g, req, e
	}
	req, e = parse(p)
	return g, req, e
}

// JSONMethod is a CSC method made of its parse and its phases: the body
// parsed into a request value (ParseRequest), then serve, a method
// without HTTP in it, whose result is the 200 JSON response.
func JSONMethod[R, S any](parse func(Params) (R, *oauth.Error), serve func(context.Context, *oauth.Grant, R) (S, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		g, req, e := ParseRequest(c, parse)
		if e != nil {
			return e
		}
		res, err := serve(c.Request().Context(), g, req)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

// ReadParams reads and checks the body of a CSC request. The Content-Type
// must be application/json (a charset parameter, if any, must be UTF-8).
// An empty body (no bytes at all) stands for {} — nothing in it can be
// misread — whatever the Content-Type, unless one other than JSON is
// declared. White space alone is a body, and not JSON.
func ReadParams(r *http.Request) (Params, *oauth.Error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, BadRequest(descBodyTooLarge)
		}
		return nil, BadRequest(descMalformedJSON)
	}
	if len(body) > MaxBody {
		return nil, BadRequest(descBodyTooLarge)
	}
	empty := len(body) == 0
	ct := r.Header.Get("Content-Type")
	if ct == "" && !empty || ct != "" && !isJSON(ct) {
		return nil, BadRequest(descContentType)
	}
	if empty {
		return Params{}, nil
	}
	return ParseObject(body)
}

func isJSON(ct string) bool {
	if ct == "application/json" { // what nearly every client sends
		return true
	}
	mt, ps, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := ps["charset"]
	return !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8")
}

// ParseObject splits a body that must be one JSON object into its members.
// jsontext reads it in one pass and refuses a repeated name in any object
// at any depth (names compared after unescaping, so "a" and "\u0061" are
// the same); nesting deeper than maxDepth inside a member is malformed.
// Refusals keep the order of a full validation first: a body that is not
// JSON at all is malformed, even when a repeated name or a value other
// than an object comes before its syntax error.
func ParseObject(body []byte) (Params, *oauth.Error) {
	// Invalid UTF-8 is refused here; the decoder then accepts an escaped
	// lone surrogate ("\ud800", read as U+FFFD) as encoding/json does.
	if !utf8.Valid(body) {
		return nil, BadRequest(descMalformedJSON)
	}
	dec := getDecoder(body, jsontext.AllowInvalidUTF8(true))
	defer putDecoder(dec)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, BadRequest(descMalformedJSON)
	}
	if tok.Kind() != '{' {
		return nil, refusal(body, descNotObject)
	}
	p := make(Params, 8)
	for {
		tok, err := dec.ReadToken() // a name or the object's '}'
		if err != nil {
			return nil, syntaxRefusal(body, err)
		}
		if tok.Kind() == '}' {
			break
		}
		key := tok.String()
		v, e := memberValue(dec, body)
		if e != nil {
			return nil, e
		}
		p[key] = v
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, BadRequest(descMalformedJSON)
	}
	return p, nil
}

// memberValue reads the value of a member of the body's object and returns
// its text, a slice of body. An object or array is read token by token to
// bound its nesting (jsontext's own bound is 10 000 levels).
func memberValue(dec *decoder, body []byte) (json.RawMessage, *oauth.Error) {
	if k := dec.PeekKind(); k != '{' && k != '[' {
		v, err := dec.ReadValue()
		if err != nil {
			return nil, syntaxRefusal(body, err)
		}
		end := int(dec.InputOffset())
		return json.RawMessage(body[end-len(v) : end : end]), nil
	}
	start := int(dec.InputOffset()) // after the name; white space and ':' follow
	for {
		if _, err := dec.ReadToken(); err != nil {
			return nil, syntaxRefusal(body, err)
		}
		switch d := dec.StackDepth(); {
		case d > maxDepth+1:
			return nil, BadRequest(descMalformedJSON)
		case d == 1: // back in the body's object
			end := int(dec.InputOffset())
			return json.RawMessage(bytes.TrimLeft(body[start:end:end], " \t\r\n:")), nil
		}
	}
}

// syntaxRefusal is the refusal for a decoder error: a repeated name, or a
// malformed body.
func syntaxRefusal(body []byte, err error) *oauth.Error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && se.Err == jsontext.ErrDuplicateName {
		return refusal(body, "Duplicate parameter "+paramName(se.JSONPointer.LastToken()))
	}
	return BadRequest(descMalformedJSON)
}

// refusal is a refusal found before the end of the body: it stands if the
// whole body is JSON (repeated names allowed), else the body is malformed.
func refusal(body []byte, desc string) *oauth.Error {
	if !json.Valid(body) {
		return BadRequest(descMalformedJSON)
	}
	return BadRequest(desc)
}

// ArrayElems returns the elements of v, a valid JSON array, undecoded, but
// at most limit of them: more reports that the array has another element,
// and nothing past it is looked at.
func ArrayElems(v []byte, limit int) (elems [][]byte, more bool) {
	dec := getDecoder(v, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	defer putDecoder(dec)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	for dec.PeekKind() != ']' {
		if len(elems) == limit {
			return elems, true
		}
		el, err := dec.ReadValue()
		if err != nil {
			return elems, false
		}
		end := int(dec.InputOffset())
		elems = append(elems, v[end-len(el):end:end])
	}
	return elems, false
}

// decoder is a jsontext.Decoder reading a byte slice in place.
type decoder struct {
	jsontext.Decoder
	src bytes.Buffer
}

// decoders keeps decoders between requests: a new one costs more
// allocations than all the rest of reading a body.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder(b []byte, opts ...jsontext.Options) *decoder {
	d := decoders.Get().(*decoder)
	d.src = *bytes.NewBuffer(b)
	d.Reset(&d.src, opts...)
	return d
}

// putDecoder returns d to the pool, without the body it read.
func putDecoder(d *decoder) {
	d.src = bytes.Buffer{}
	d.Reset(&d.src)
	decoders.Put(d)
}

// Has reports whether name is present and not null.
func (p Params) Has(name string) bool {
	v, ok := p[name]
	return ok && string(v) != "null"
}

// Kind returns the JSON type of a member: '"', '{', '[', 't'/'f', 'n' or a
// number's first byte; 0 when absent.
func (p Params) Kind(name string) byte {
	v, ok := p[name]
	if !ok || len(v) == 0 {
		return 0
	}
	return v[0]
}

// Str returns a string member. ok is false when it is absent or null; e is
// set when it is present but not a string, or required and absent or
// empty.
func (p Params) Str(name string, required bool) (s string, ok bool, e *oauth.Error) {
	if !p.Has(name) {
		if required {
			return "", false, Missing("string", name)
		}
		return "", false, nil
	}
	if s, ok = JSONString(p[name]); !ok {
		return "", false, Missing("string", name)
	}
	if s == "" && required {
		return "", false, Missing("string", name)
	}
	return s, true, nil
}

// JSONString decodes v, a JSON value, as a string; ok is false when it is
// not one. A string of printable ASCII without escapes (every credential
// ID, SAD and base64 hash a client sends) is its own text and is taken as
// is; any other goes through encoding/json.
func JSONString(v []byte) (s string, ok bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	plain := v[len(v)-1] == '"'
	for _, c := range inner {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), true
	}
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// Bool returns a boolean member, def when absent or null.
func (p Params) Bool(name string, def bool) (bool, *oauth.Error) {
	if !p.Has(name) {
		return def, nil
	}
	switch string(p[name]) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, Missing("boolean", name)
}

// PositiveInt returns an integer member given as a JSON number or as a
// string of decimal digits (the specification declares maxResults a
// string, its sample sends a number). ok is false when absent or null.
func (p Params) PositiveInt(name string) (n int, ok bool, e *oauth.Error) {
	if !p.Has(name) {
		return 0, false, nil
	}
	raw := string(p[name])
	switch k := p.Kind(name); {
	case k == '"':
		s, ok := JSONString(p[name])
		if !ok {
			return 0, false, Missing("integer", name)
		}
		raw = s
	case k == '-' || k >= '0' && k <= '9':
	default:
		return 0, false, Missing("integer", name)
	}
	if raw == "" || strings.TrimLeft(raw, "0123456789") != "" {
		return 0, false, Invalid(name)
	}
	if digits := strings.TrimLeft(raw, "0"); len(digits) > 9 {
		return 1 << 30, true, nil // "too large" means the server's maximum
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, false, Invalid(name)
	}
	return n, true, nil
}

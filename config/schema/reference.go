package schema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The markers around the key table in docs/CONFIG.md. SpliceReference
// rewrites what is between them; the prose around them is written by hand.
const (
	ReferenceBegin = "<!-- BEGIN key table: generated from config/keys.go by `go generate ./config`; do not edit -->"
	ReferenceEnd   = "<!-- END key table -->"
)

// Reference returns the key table of docs/CONFIG.md as markdown: one row
// per key of keys, in the table's order, with its default and flag (from
// the table, so they cannot drift), what a SIGHUP reload does with a new
// value (Reload: "applied", else "restart") and its Doc (or Usage). A Doc
// or Usage that would break the row (a line break or a "|") is an error.
func Reference(keys []Key) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("| Key | Default | Flag | Reload | Meaning |\n|---|---|---|---|---|\n")
	for _, k := range keys {
		doc := k.Doc
		if doc == "" {
			doc = k.Usage
		}
		if strings.ContainsAny(doc, "|\r\n") {
			return nil, fmt.Errorf("config reference: the description of %s has a line break or a \"|\": it must fit in one table cell", k.Name)
		}
		flag := ""
		if k.Flag != "" {
			flag = "`--" + k.Flag + "`"
		}
		reload := "restart"
		if k.Reload {
			reload = "applied"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Name, referenceDefault(k), flag, reload, doc)
	}
	return b.Bytes(), nil
}

// referenceDefault writes a key's default as the table shows it.
func referenceDefault(k Key) string {
	if k.Required {
		return "(required)"
	}
	switch v := k.Default.(type) {
	case Secret:
		return "empty"
	case string:
		if v == "" {
			return "empty"
		}
	case []string:
		if len(v) == 0 {
			return "empty"
		}
		return "`[" + strings.Join(v, ", ") + "]`"
	case time.Duration:
		return "`" + shortDuration(v) + "`"
	}
	return fmt.Sprintf("`%v`", k.Default)
}

// shortDuration writes 1h for 1h0m0s and 1m for 1m0s, as the file takes
// them.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// SpliceReference returns doc with the text between ReferenceBegin and
// ReferenceEnd replaced by Reference(keys). Each marker must be on a line of
// its own, once, the begin before the end.
func SpliceReference(doc []byte, keys []Key) ([]byte, error) {
	begin := []byte(ReferenceBegin + "\n")
	end := []byte("\n" + ReferenceEnd + "\n")
	i, j := bytes.Index(doc, begin), bytes.Index(doc, end)
	if i < 0 || j < 0 || j < i || (i > 0 && doc[i-1] != '\n') || bytes.Count(doc, []byte(ReferenceBegin)) != 1 || bytes.Count(doc, []byte(ReferenceEnd)) != 1 {
		return nil, errors.New("config reference: the document needs each of the lines " + ReferenceBegin + " and " + ReferenceEnd + " once, in that order")
	}
	table, err := Reference(keys)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(begin)])
	out.Write(table)
	out.Write(doc[j+1:])
	return out.Bytes(), nil
}

package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/config/schema"
)

// TestConfigDocUpToDate: docs/CONFIG.md's key table is exactly what the
// key table here generates, so a key added, a default changed or a
// description edited without `go generate ./config` fails.
func TestConfigDocUpToDate(t *testing.T) {
	have, err := os.ReadFile("../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := SpliceReference(have)
	if err != nil {
		t.Fatalf("docs/CONFIG.md: %v", err)
	}
	if bytes.Equal(have, want) {
		return
	}
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(h) || i < len(w); i++ {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			t.Fatalf("docs/CONFIG.md's key table is not the one config/keys.go makes: run `go generate ./config`\nline %d is\n\t%s\nshould be\n\t%s", i+1, hl, wl)
		}
	}
}

// TestReferenceRows: one row per key in the table's order, with the
// default and flag of the table, whether a reload applies it, and the Doc
// (else the Usage).
func TestReferenceRows(t *testing.T) {
	keys := []Key{
		{Name: "a.required", Default: "", Required: true, Flag: "req", Usage: "usage only"},
		{Name: "a.empty", Default: "", Usage: "u", Doc: "the `doc` wins"},
		{Name: "a.secret", Default: Secret("x"), Usage: "u"},
		{Name: "a.list", Default: []string(nil), Usage: "u"},
		{Name: "a.hosts", Default: []string{"h1", "h2"}, Usage: "u"},
		{Name: "a.hour", Default: time.Hour, Usage: "u"},
		{Name: "a.minute", Default: 60 * time.Second, Usage: "u"},
		{Name: "a.mixed", Default: 90 * time.Second, Usage: "u"},
		{Name: "a.int", Default: 0, Flag: "n", Usage: "u"},
		{Name: "a.rate", Default: 0.5, Usage: "u"},
		{Name: "a.bool", Default: false, Usage: "u"},
		{Name: "a.reload", Default: "", Usage: "u", Reload: true},
	}
	got, err := schema.Reference(keys)
	if err != nil {
		t.Fatal(err)
	}
	want := "| Key | Default | Flag | Reload | Meaning |\n|---|---|---|---|---|\n" +
		"| `a.required` | (required) | `--req` | restart | usage only |\n" +
		"| `a.empty` | empty |  | restart | the `doc` wins |\n" +
		"| `a.secret` | empty |  | restart | u |\n" +
		"| `a.list` | empty |  | restart | u |\n" +
		"| `a.hosts` | `[h1, h2]` |  | restart | u |\n" +
		"| `a.hour` | `1h` |  | restart | u |\n" +
		"| `a.minute` | `1m` |  | restart | u |\n" +
		"| `a.mixed` | `1m30s` |  | restart | u |\n" +
		"| `a.int` | `0` | `--n` | restart | u |\n" +
		"| `a.rate` | `0.5` |  | restart | u |\n" +
		"| `a.bool` | `false` |  | restart | u |\n" +
		"| `a.reload` | empty |  | applied | u |\n"
	if string(got) != want {
		t.Errorf("reference:\n%s\nwant:\n%s", got, want)
	}

	// The real table: every key once, every description fits a cell.
	table, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		if n := strings.Count(string(table), "\n| `"+k.Name+"` |"); n != 1 {
			t.Errorf("%s has %d rows in the reference, want 1", k.Name, n)
		}
	}
}

// TestReferenceRefusesBrokenCells: a description with a "|" or a line
// break would split or end its row; the generator names the key.
func TestReferenceRefusesBrokenCells(t *testing.T) {
	for _, k := range []Key{
		{Name: "a.pipe", Default: "", Usage: "u", Doc: "one | two"},
		{Name: "a.newline", Default: "", Usage: "u", Doc: "one\ntwo"},
		{Name: "a.usage", Default: "", Usage: "a|b"},
	} {
		_, err := schema.Reference([]Key{k})
		if err == nil || !strings.Contains(err.Error(), k.Name) {
			t.Errorf("%s: err = %v, want one naming the key", k.Name, err)
		}
	}
}

// TestSpliceReference: the table goes between the markers and the prose
// around them stays; a document without both markers, once each and in
// order, is refused rather than half rewritten.
func TestSpliceReference(t *testing.T) {
	table, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	doc := "# Configuration\n\nprose before\n" + ReferenceBegin + "\nstale table\n" + ReferenceEnd + "\n\nprose after\n"
	got, err := SpliceReference([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Configuration\n\nprose before\n" + ReferenceBegin + "\n" + string(table) + ReferenceEnd + "\n\nprose after\n"
	if string(got) != want {
		t.Errorf("splice:\n%s\nwant:\n%s", got, want)
	}
	again, err := SpliceReference(got)
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("splicing twice changed the document (err %v)", err)
	}
	for name, bad := range map[string]string{
		"no markers":  "# Configuration\n",
		"no end":      ReferenceBegin + "\ntable\n",
		"no begin":    "table\n" + ReferenceEnd + "\n",
		"reversed":    ReferenceEnd + "\n" + ReferenceBegin + "\n",
		"two begins":  ReferenceBegin + "\n" + ReferenceBegin + "\nx\n" + ReferenceEnd + "\n",
		"two ends":    ReferenceBegin + "\nx\n" + ReferenceEnd + "\n" + ReferenceEnd + "\n",
		"inline mark": "see " + ReferenceBegin + " x\n" + ReferenceEnd + "\n",
		"mid-line":    "see " + ReferenceBegin + "\nx\n" + ReferenceEnd + "\n",
	} {
		if _, err := SpliceReference([]byte(bad)); err == nil {
			t.Errorf("%s: spliced, want an error", name)
		}
	}
}

package docs

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// maxReadmeLines is how long README.md may grow: what signd is, the
// quick start, the picture and the links; the rest belongs in docs/.
const maxReadmeLines = 250

// page is what a markdown file offers and asks for: its headings' anchors
// and its links.
type page struct {
	anchors map[string]bool
	links   []string
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// parse reads a markdown document: every heading's anchor (GitHub's rule,
// see anchor) and the destination of every link and image. Links in code
// spans and code blocks are text, not links, and are not reported.
func parse(src []byte) page {
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	doc := markdown.Parser().Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			a := anchor(plainText(n, src))
			if k := seen[a]; k > 0 {
				p.anchors[fmt.Sprintf("%s-%d", a, k)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		case *ast.Link:
			p.links = append(p.links, string(n.Destination))
		case *ast.Image:
			p.links = append(p.links, string(n.Destination))
		}
		return ast.WalkContinue, nil
	})
	return p
}

// plainText is a node's text as a reader sees it: code spans without
// their backquotes, links without their destinations.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// anchor is the fragment GitHub gives a heading: lower case, every space a
// hyphen, and every character but letters, digits, marks, "-" and "_"
// dropped. A repeated heading gets -1, -2, ... (parse adds those).
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// broken checks the relative links of the markdown file at path (relative
// to root) and returns one line per link that points at no file, or at a
// heading its markdown target does not have. Links with a scheme
// (https:, mailto:) are not followed.
func broken(root, path string) ([]string, error) {
	src, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var problems []string
	pages := map[string]page{path: parse(src)}
	for _, link := range pages[path].links {
		u, err := url.Parse(link)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: link %q: %v", path, link, err))
			continue
		}
		if u.Scheme != "" || u.Host != "" {
			continue
		}
		target := path
		if u.Path != "" {
			if strings.HasPrefix(u.Path, "/") {
				problems = append(problems, fmt.Sprintf("%s: link %q is absolute: write it relative to %s", path, link, filepath.Dir(path)))
				continue
			}
			target = filepath.Join(filepath.Dir(path), u.Path)
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				problems = append(problems, fmt.Sprintf("%s: link %q: no file %s", path, link, target))
				continue
			}
		}
		if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
			continue
		}
		p, ok := pages[target]
		if !ok {
			src, err := os.ReadFile(filepath.Join(root, target))
			if err != nil {
				return nil, err
			}
			p = parse(src)
			pages[target] = p
		}
		if !p.anchors[u.Fragment] {
			problems = append(problems, fmt.Sprintf("%s: link %q: %s has no heading #%s", path, link, target, u.Fragment))
		}
	}
	return problems, nil
}

// documents are the markdown files a reader reaches from README.md,
// relative to the repository's root.
func documents(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"README.md", "CHANGELOG.md"}
	for _, p := range pages {
		docs = append(docs, filepath.Join("docs", p))
	}
	slices.Sort(docs)
	return docs
}

// TestLinksResolve: every relative link of README.md, CHANGELOG.md and
// docs/*.md names a file that exists and, into a markdown file, a heading
// it has. Moving a section breaks the links to it; this names each.
func TestLinksResolve(t *testing.T) {
	checked := 0
	for _, doc := range documents(t) {
		problems, err := broken("..", doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("checked %d documents; README.md and docs/*.md not found", checked)
	}
}

// TestReadmeIsShort: README.md stays a page a newcomer reads in five
// minutes; reference text goes to docs/ and is linked.
func TestReadmeIsShort(t *testing.T) {
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move reference text to docs/ and link it", n, maxReadmeLines)
	}
}

// TestAnchor: GitHub's anchors for headings of the kinds these documents
// use.
func TestAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Securing the admin socket", "securing-the-admin-socket"},
		{"Production: the Debian package", "production-the-debian-package"},
		{"Signing a PDF: cmd/signd-pdf", "signing-a-pdf-cmdsignd-pdf"},
		{"Identity attributes (--claims FILE.json)", "identity-attributes---claims-filejson"},
		{"OAuth 2.0 authorization server", "oauth-20-authorization-server"},
		{"SoftHSM2 2.6 — tested here", "softhsm2-26--tested-here"},
		{"Checking what signd found: signd hsm info", "checking-what-signd-found-signd-hsm-info"},
		{"store.etcd_prefix", "storeetcd_prefix"},
	} {
		if got := anchor(tc.heading); got != tc.want {
			t.Errorf("anchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestBrokenLinksFound: the check names a missing file, a missing heading
// in another file and in the same file, and an absolute path; it follows
// neither URLs nor links inside code, and counts repeated headings as
// GitHub does.
func TestBrokenLinksFound(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/OTHER.md", "# Other\n\n## Backups and a restore drill\n\n## Notes\n\n## Notes\n")
	write("docs/plain.txt", "x")
	write("README.md", strings.Join([]string{
		"# Title",
		"## Quick start",
		"[ok](docs/OTHER.md) [ok](docs/OTHER.md#backups-and-a-restore-drill) [ok](#quick-start)",
		"[ok](docs/OTHER.md#notes-1) [ok](docs/plain.txt) [ok](https://example.com/missing.md#x)",
		"`[in code](missing.md)`",
		"```",
		"[in a block](missing.md)",
		"```",
		"| a | b |",
		"|---|---|",
		"| [gone](docs/GONE.md) | [no heading](docs/OTHER.md#restore) |",
		"[here](#no-such-heading) [absolute](/docs/OTHER.md) [third](docs/OTHER.md#notes-2)",
		"",
	}, "\n"))
	got, err := broken(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`README.md: link "docs/GONE.md": no file docs/GONE.md`,
		`README.md: link "docs/OTHER.md#restore": docs/OTHER.md has no heading #restore`,
		`README.md: link "#no-such-heading": README.md has no heading #no-such-heading`,
		`README.md: link "/docs/OTHER.md" is absolute: write it relative to .`,
		`README.md: link "docs/OTHER.md#notes-2": docs/OTHER.md has no heading #notes-2`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package pages

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestMessages: every message exists in both languages, and every key the
// templates and the Go code use exists.
func TestMessages(t *testing.T) {
	for _, lang := range supportedLangs {
		for key, s := range messages[lang] {
			if s == "" {
				t.Errorf("%s: %s is empty", lang, key)
			}
			for _, other := range supportedLangs {
				if _, ok := messages[other][key]; !ok {
					t.Errorf("%s has %s, %s does not", lang, key, other)
				}
			}
		}
	}
	tmpl, err := templateFS.ReadFile("templates/pages.html")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\.T "([a-z.]+)"`).FindAllStringSubmatch(string(tmpl), -1) {
		used[m[1]] = true
	}
	// The keys this package and its users name: the authorization server,
	// its browser flow and its account page.
	var files []string
	for _, pattern := range []string{"*.go", "../*.go", "../*/*.go"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	keyRE := regexp.MustCompile(`"((?:errorpage|error|login|consent|field|redirect)\.[a-z.]+)"`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range keyRE.FindAllStringSubmatch(string(src), -1) {
			used[m[1]] = true
		}
	}
	if len(used) < 20 {
		t.Fatalf("found only %d used keys", len(used))
	}
	for key := range used {
		for _, lang := range supportedLangs {
			if _, ok := messages[lang][key]; !ok {
				t.Errorf("key %s is used but missing in %s", key, lang)
			}
		}
	}
	for key := range messages[NL] {
		if !used[key] {
			t.Errorf("key %s is never used", key)
		}
	}
}

func TestPickLang(t *testing.T) {
	m := newLangMatcher()
	for _, tt := range []struct{ ui, lang, want string }{
		{"", "", ""}, {"en", "", "en"}, {"se", "", ""}, {"se en", "", "en"},
		{"en-US nl", "", "en"}, {"", "en", "en"}, {"", "nl-BE", "nl"}, {"zz", "en", "en"},
		{"nl", "en", "nl"}, {"x-bad-tag-!!", "", ""},
	} {
		if got, _ := pickLang(m, tt.ui, tt.lang); got != tt.want {
			t.Errorf("pickLang(%q, %q) = %s, want %s", tt.ui, tt.lang, got, tt.want)
		}
	}
}

func TestCSPSource(t *testing.T) {
	for in, want := range map[string]string{
		"https://rp.example/cb":          "https://rp.example",
		"http://127.0.0.1:8080/cb?x=1":   "http://127.0.0.1:8080",
		"com.example.app:/oauth":         "com.example.app:",
		"https://[::1]:8443/cb":          "https://[::1]:8443",
		"":                               "",
		"https://a.example;script-src/x": "",
		"relative/path":                  "",
	} {
		if got := cspSource(in); got != want {
			t.Errorf("cspSource(%q) = %q, want %q", in, got, want)
		}
	}
}

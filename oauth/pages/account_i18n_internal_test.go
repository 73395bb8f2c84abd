package pages

import (
	"maps"
	"regexp"
	"slices"
	"testing"
)

// Both languages have every account page string, every key the account
// templates use exists, and so does every status the rows can show.
func TestAccountMessages(t *testing.T) {
	keys := []string{"account.title", "account.refused", "errorpage.crosssite", "errorpage.csrf", "errorpage.request",
		"error.credentials", "error.busy"}
	for _, s := range []string{"enabled", "disabled", "disabled-admin", "pending"} {
		keys = append(keys, "account.status."+s)
	}
	for _, s := range []string{"valid", "expired", "revoked", "suspended", "unknown"} {
		keys = append(keys, "account.cert."+s)
	}
	wantMessages(t, accountMessages, "templates/account.html", keys...)
}

// wantMessages checks a page's own messages: nl and en have the same keys,
// and every language has a message for each key the template tmpl names
// and for each of keys.
func wantMessages(t *testing.T, messages map[string]map[string]string, tmpl string, keys ...string) {
	t.Helper()
	nl, en := slices.Sorted(maps.Keys(messages[NL])), slices.Sorted(maps.Keys(messages[EN]))
	if !slices.Equal(nl, en) {
		t.Errorf("nl and en differ:\nnl %v\nen %v", nl, en)
	}
	text, err := templateFS.ReadFile(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\.T "([a-z0-9.]+)"`).FindAllStringSubmatch(string(text), -1) {
		keys = append(keys, m[1])
	}
	for _, lang := range supportedLangs {
		for _, k := range keys {
			if Msg(lang, k) == k {
				t.Errorf("%s: no message %q", lang, k)
			}
		}
	}
}

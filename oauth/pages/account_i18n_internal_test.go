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
	nl, en := slices.Sorted(maps.Keys(accountMessages[NL])), slices.Sorted(maps.Keys(accountMessages[EN]))
	if !slices.Equal(nl, en) {
		t.Errorf("nl and en differ:\nnl %v\nen %v", nl, en)
	}
	tmpl, err := templateFS.ReadFile("templates/account.html")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"account.title", "account.refused", "errorpage.crosssite", "errorpage.csrf", "errorpage.request",
		"error.credentials", "error.busy"}
	for _, m := range regexp.MustCompile(`\.T "([a-z.]+)"`).FindAllStringSubmatch(string(tmpl), -1) {
		keys = append(keys, m[1])
	}
	for _, s := range []string{"enabled", "disabled", "disabled-admin", "pending"} {
		keys = append(keys, "account.status."+s)
	}
	for _, s := range []string{"valid", "expired", "revoked", "suspended", "unknown"} {
		keys = append(keys, "account.cert."+s)
	}
	for _, lang := range supportedLangs {
		for _, k := range keys {
			if Msg(lang, k) == k {
				t.Errorf("%s: no message %q", lang, k)
			}
		}
	}
}

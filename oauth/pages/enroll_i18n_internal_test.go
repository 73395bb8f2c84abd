package pages

import (
	"maps"
	"regexp"
	"slices"
	"testing"
)

// Both languages have every enrollment page string, and every key the
// enrollment templates and the page's errors use exists.
func TestEnrollMessages(t *testing.T) {
	nl, en := slices.Sorted(maps.Keys(enrollMessages[NL])), slices.Sorted(maps.Keys(enrollMessages[EN]))
	if !slices.Equal(nl, en) {
		t.Errorf("nl and en differ:\nnl %v\nen %v", nl, en)
	}
	tmpl, err := templateFS.ReadFile("templates/enroll.html")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"enroll.title", "enroll.refused", "enroll.error.password", "enroll.error.pin", "enroll.error.mismatch", "enroll.error.totp",
		"errorpage.crosssite", "errorpage.csrf", "errorpage.request"}
	for _, m := range regexp.MustCompile(`\.T "([a-z0-9.]+)"`).FindAllStringSubmatch(string(tmpl), -1) {
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

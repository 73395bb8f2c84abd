package csc

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// seedCred is a credential ID as signd makes them.
const seedCred = "kr3e3rdpe6muvlifxu2m3wpecu"

// FuzzPageToken attacks the credentials/list page token: a token the
// handler issued opens to the credential it names for its user and for no
// other; a token that opens is exactly the one the handler would issue for
// what it opens to (one spelling per page, nothing forged or altered).
func FuzzPageToken(f *testing.F) {
	h := &Handler{PageTokenKey: bytes.Repeat([]byte{0x5a}, 32)}
	for _, s := range []struct{ after, user, other string }{
		{seedCred, "alice", "bob"},
		{"a", "alice", "alice2"},
		{strings.Repeat("z", 128), "user@example.com", "user@example.co"},
		{"id-with-\x00-nul", "carol", ""},
	} {
		f.Add(s.after, s.user, h.pageToken(s.after, s.user), s.other)
	}
	f.Add("", "alice", "", "bob")
	f.Add("x", "alice", "eAAAAAAAAAAAAAAAAAAAAAAA", "bob")
	f.Fuzz(func(t *testing.T, after, user, token, other string) {
		if after != "" && len(after) <= 512-pageTagLen {
			tok := h.pageToken(after, user)
			if got, ok := h.openPageToken(tok, user); !ok || got != after {
				t.Fatalf("token for %q of %q opens to %q, %v", after, user, got, ok)
			}
			if other != user {
				if _, ok := h.openPageToken(tok, other); ok {
					t.Fatalf("token of %q opens for %q", user, other)
				}
			}
		}
		got, ok := h.openPageToken(token, user)
		if !ok {
			return
		}
		if got == "" || len(got)+pageTagLen > 512 || !utf8.ValidString(token) {
			t.Fatalf("token %q opened to %q", token, got)
		}
		if want := h.pageToken(got, user); token != want {
			t.Fatalf("token %q opened to %q, but the token of %q is %q", token, got, got, want)
		}
	})
}

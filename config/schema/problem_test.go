package schema

import "testing"

func TestSuggest(t *testing.T) {
	known := []string{"server", "server.listen", "pkcs11.pin_file", "pkcs11"}
	for key, want := range map[string]string{
		"server.lisen":    `did you mean "server.listen"?`,
		"server.listen_":  `did you mean "server.listen"?`,
		"SERVER":          `did you mean "server"? keys are lower case`,
		"pkcs11.pin_fiel": `did you mean "pkcs11.pin_file"?`,
		"oauth":           "",
		"server.address":  "",
	} {
		if got := suggest(key, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", key, got, want)
		}
	}
}

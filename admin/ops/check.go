package ops

import (
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/store"
)

var claimKeys = []string{
	"given_name", "last_name", "birthdate", "birthplace", "nationality",
	"document_type", "id_number",
	"nl_brp_voornaam", "nl_brp_voorvoegsel", "nl_brp_geslachtsnaam",
	"nl_brp_geslachtsnaam_zonder_voorvoegsel",
	"id_document_issuance_date", "id_document_issuance_place",
}

// ClaimKeys lists the identity attribute names `signd user add --claims`
// accepts.
func ClaimKeys() []string { return slices.Clone(claimKeys) }

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// CheckClaims checks identity attributes (AddUserRequest.Claims): known keys
// (ClaimKeys) with 1 to input.MaxClaimLen printable bytes, dates as YYYY-MM-DD.
func CheckClaims(claims map[string]string) error {
	for k, v := range claims {
		if !slices.Contains(claimKeys, k) {
			return errorf(KindInvalid, "claims: unknown key %q (allowed: %s)", k, strings.Join(claimKeys, ", "))
		}
		if v == "" || len(v) > input.MaxClaimLen || !input.Printable(v) {
			return errorf(KindInvalid, "claims: %s must be 1-%d printable characters", k, input.MaxClaimLen)
		}
		if k == "birthdate" || k == "id_document_issuance_date" {
			if _, err := time.Parse(time.DateOnly, v); err != nil || !dateRE.MatchString(v) {
				return errorf(KindInvalid, "claims: %s must be a date YYYY-MM-DD", k)
			}
		}
	}
	return nil
}

// CheckEmail checks a plain email address; "" is none.
func CheckEmail(e string) error {
	if e == "" {
		return nil
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		return errorf(KindInvalid, "email: %q is not a plain email address", e)
	}
	return nil
}

// CheckSecretLen checks that the secret s, called what, has lo to hi
// printable bytes; the error never holds s.
func CheckSecretLen(what, s string, lo, hi int) error {
	if len(s) < lo || len(s) > hi {
		return errorf(KindInvalid, "%s must be %d to %d bytes long", what, lo, hi)
	}
	if !input.Printable(s) {
		return errorf(KindInvalid, "%s contains control characters", what)
	}
	return nil
}

// knownScopes are the scopes a client may be registered for. The OIDC
// namespaced scopes are checked by suffix, the namespace being configurable.
var knownScopes = []string{"service", "credential", "openid", "email"}

var knownScopeSuffixes = []string{".personal_info", ".id_number", ".proof"}

// ValidScope reports whether a client may be registered for scope s.
func ValidScope(s string) bool {
	if slices.Contains(knownScopes, s) {
		return true
	}
	for _, suf := range knownScopeSuffixes {
		if strings.HasSuffix(s, suf) && len(s) > len(suf) && input.Printable(s) && !strings.ContainsAny(s, " \"\\") {
			return true
		}
	}
	return false
}

// FirstDuplicate returns the first of xs that occurs twice, "" for none.
func FirstDuplicate(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// CheckAuth checks the multisign and authMode of a request; 0 and "" are
// the defaults (1, oauth2code).
func CheckAuth(multisign int, mode string) (store.AuthMode, error) {
	if multisign < 0 || multisign > store.MaxMultisign {
		return "", errorf(KindInvalid, "multisign must be 1 to %d", store.MaxMultisign)
	}
	switch m := store.AuthMode(mode); m {
	case "":
		return store.AuthOAuth2Code, nil
	case store.AuthOAuth2Code, store.AuthExplicit:
		return m, nil
	}
	return "", errorf(KindInvalid, "auth mode must be %s or %s", store.AuthOAuth2Code, store.AuthExplicit)
}

// CheckDescription checks a credential description: at most
// MaxCredentialDescription printable characters (the pages show it to the
// owner), no white space around them.
func CheckDescription(d string) error {
	if d == "" {
		return nil
	}
	if !utf8.ValidString(d) || utf8.RuneCountInString(d) > MaxCredentialDescription || strings.TrimSpace(d) != d {
		return errorf(KindInvalid, "description must be 1 to %d printable characters without white space around them", MaxCredentialDescription)
	}
	for _, r := range d {
		if !unicode.IsPrint(r) {
			return errorf(KindInvalid, "description has a character that is not printable (%U)", r)
		}
	}
	return nil
}

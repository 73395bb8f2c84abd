package oauth

import (
	"strings"

	"golang.org/x/text/language"
)

// The page languages: Dutch (the default) and English.
const (
	langNL = "nl"
	langEN = "en"
)

// supportedLangs is the matcher's list; its order is the index order of
// language.Matcher.Match.
var supportedLangs = []string{langNL, langEN}

// newLangMatcher builds the matcher over supportedLangs (Dutch first, so it
// is the fallback).
func newLangMatcher() language.Matcher {
	return language.NewMatcher([]language.Tag{language.Dutch, language.English})
}

// pickLang chooses the page language from ui_locales (an RFC 5646 list in
// order of preference, OIDC Core §3.1.2.1), then lang (CSC): the first
// source with a supported tag wins; nothing supported gives Dutch.
func pickLang(m language.Matcher, uiLocales, lang string) string {
	for _, src := range []string{uiLocales, lang} {
		var tags []language.Tag
		for _, f := range strings.Fields(src) {
			if t, err := language.Parse(f); err == nil {
				tags = append(tags, t)
			}
		}
		if len(tags) == 0 {
			continue
		}
		if _, i, conf := m.Match(tags...); conf != language.No {
			return supportedLangs[i]
		}
	}
	return langNL
}

// messages holds every page string in both languages; a test checks that
// both have the same keys and that every key the templates use exists.
var messages = map[string]map[string]string{
	langNL: {
		"login.title":         "Inloggen",
		"login.heading":       "Inloggen",
		"login.for":           "U logt in voor",
		"login.submit":        "Inloggen",
		"login.cancel":        "Annuleren",
		"field.username":      "Gebruikersnaam",
		"field.password":      "Wachtwoord",
		"field.otp":           "Eenmalige code",
		"field.otp.hint":      "Alleen als u een authenticator-app heeft ingesteld.",
		"field.pin":           "Ondertekenings-PIN",
		"consent.title":       "Toestemming",
		"consent.client":      "De toepassing",
		"consent.may":         "vraagt uw toestemming om namens u:",
		"consent.details":     "Details",
		"consent.pin.hint":    "Voer uw ondertekenings-PIN in om toe te staan.",
		"consent.approve":     "Toestaan",
		"consent.deny":        "Weigeren",
		"error.credentials":   "De inloggegevens zijn onjuist, of het account is geblokkeerd.",
		"error.busy":          "Het is op dit moment erg druk. Probeer het over enkele ogenblikken opnieuw.",
		"error.pin":           "De PIN is onjuist.",
		"error.decision":      "Kies Toestaan of Weigeren.",
		"error.changed":       "Uw gegevens zijn zojuist gewijzigd. Controleer ze en kies opnieuw.",
		"errorpage.title":     "Er ging iets mis",
		"errorpage.heading":   "Dit verzoek kan niet worden verwerkt",
		"errorpage.advice":    "Ga terug naar de toepassing en probeer het opnieuw.",
		"errorpage.client":    "De toepassing (client_id) is onbekend.",
		"errorpage.redirect":  "Het terugkeeradres (redirect_uri) ontbreekt of is niet geregistreerd voor deze toepassing.",
		"errorpage.request":   "Het verzoek is ongeldig.",
		"errorpage.unknown":   "Dit verzoek is onbekend of verlopen.",
		"errorpage.answered":  "Dit verzoek is al beantwoord.",
		"errorpage.server":    "Er is een interne fout opgetreden.",
		"errorpage.later":     "De dienst is tijdelijk niet beschikbaar. Probeer het over enkele ogenblikken opnieuw.",
		"errorpage.csrf":      "Het formulier is verlopen of ongeldig.",
		"errorpage.browser":   "Dit formulier is niet in deze browser geopend, of de browser stuurde het cookie van deze pagina niet mee. Begin opnieuw bij de toepassing, in deze browser en met cookies aan.",
		"errorpage.crosssite": "Dit formulier is vanaf een andere website verstuurd en daarom geweigerd.",
		"errorpage.code":      "Foutcode",
		"footer.text":         "signd, ondertekenen op afstand",
	},
	langEN: {
		"login.title":         "Sign in",
		"login.heading":       "Sign in",
		"login.for":           "You are signing in for",
		"login.submit":        "Sign in",
		"login.cancel":        "Cancel",
		"field.username":      "Username",
		"field.password":      "Password",
		"field.otp":           "One-time code",
		"field.otp.hint":      "Only if you have set up an authenticator app.",
		"field.pin":           "Signing PIN",
		"consent.title":       "Consent",
		"consent.client":      "The application",
		"consent.may":         "asks your permission to, on your behalf:",
		"consent.details":     "Details",
		"consent.pin.hint":    "Enter your signing PIN to approve.",
		"consent.approve":     "Approve",
		"consent.deny":        "Deny",
		"error.credentials":   "The sign-in details are wrong, or the account is locked.",
		"error.busy":          "The service is very busy. Please try again in a moment.",
		"error.pin":           "The PIN is wrong.",
		"error.decision":      "Choose Approve or Deny.",
		"error.changed":       "Your details have just changed. Please check them and choose again.",
		"errorpage.title":     "Something went wrong",
		"errorpage.heading":   "This request cannot be processed",
		"errorpage.advice":    "Go back to the application and try again.",
		"errorpage.client":    "The application (client_id) is unknown.",
		"errorpage.redirect":  "The return address (redirect_uri) is missing or not registered for this application.",
		"errorpage.request":   "The request is invalid.",
		"errorpage.unknown":   "This request is unknown or has expired.",
		"errorpage.answered":  "This request has already been answered.",
		"errorpage.server":    "An internal error occurred.",
		"errorpage.later":     "The service is temporarily unavailable. Please try again in a moment.",
		"errorpage.csrf":      "The form has expired or is invalid.",
		"errorpage.browser":   "This form was not opened in this browser, or the browser did not send this page's cookie. Start again from the application, in this browser and with cookies enabled.",
		"errorpage.crosssite": "This form was sent from another website and has therefore been refused.",
		"errorpage.code":      "Error code",
		"footer.text":         "signd, remote signing",
	},
}

// msg returns the message key in lang; a missing key shows as itself (a
// test makes sure none is missing).
func msg(lang, key string) string {
	if s, ok := messages[lang][key]; ok {
		return s
	}
	if s, ok := accountMessages[lang][key]; ok {
		return s
	}
	return key
}

package pages

import (
	"net/http"
	"strings"

	"golang.org/x/text/language"
)

// The page languages: Dutch (the default) and English.
const (
	NL = "nl"
	EN = "en"
)

// supportedLangs is the matcher's list; its order is the index order of
// language.Matcher.Match.
var supportedLangs = []string{NL, EN}

// newLangMatcher builds the matcher over supportedLangs (Dutch first, so it
// is the fallback).
func newLangMatcher() language.Matcher {
	return language.NewMatcher([]language.Tag{language.Dutch, language.English})
}

// LangCookie is the cookie the language switch (SwitchLang) sets: nl or
// en.
const LangCookie = "signd_lang"

// Lang is the one rule every page's language follows: the request's
// ui_locales (an RFC 5646 list in order of preference, OIDC Core
// §3.1.2.1), then lang (CSC v1 §8.3.2), then the cookie the language
// switch set (LangCookie), then the Accept-Language header (RFC 9110
// §12.5.4), then Dutch. The first source with a supported tag wins. r may
// be nil (no cookie, no header). The login and consent pages take their
// ui_locales and lang from the authorization request; the other pages from
// the query.
func (p *Pages) Lang(r *http.Request, uiLocales, lang string) string {
	if l, ok := pickLang(p.matcher, uiLocales, lang); ok {
		return l
	}
	if r == nil {
		return NL
	}
	if c, err := r.Cookie(LangCookie); err == nil && (c.Value == NL || c.Value == EN) {
		return c.Value
	}
	tags, _, err := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	if err == nil && len(tags) > 0 {
		if _, i, conf := p.matcher.Match(tags...); conf != language.No {
			return supportedLangs[i]
		}
	}
	return NL
}

// RequestLang is Lang of a page that is not part of an authorization
// request: ui_locales and lang from the query.
func (p *Pages) RequestLang(r *http.Request) string {
	q := r.URL.Query()
	return p.Lang(r, q.Get("ui_locales"), q.Get("lang"))
}

// pickLang is the first supported language of uiLocales, then of lang
// (each a space-separated list of RFC 5646 tags); ok is false when neither
// names one.
func pickLang(m language.Matcher, uiLocales, lang string) (string, bool) {
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
			return supportedLangs[i], true
		}
	}
	return "", false
}

// messages holds every page string in both languages; a test checks that
// both have the same keys and that every key the templates use exists.
var messages = map[string]map[string]string{
	NL: {
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
		"errorpage.ratelimit": "Er kwamen te veel verzoeken van uw adres. Wacht even en probeer het dan opnieuw.",
		"errorpage.code":      "Foutcode",
		"redirect.challenge":  "De tijd om in te loggen is verlopen; een inlogverzoek is beperkt geldig. Probeer het opnieuw en log binnen de tijd in.",
		"redirect.email":      "Uw e-mailadres is nog niet bevestigd. Volg de link in de bevestigingsmail om het te activeren.",
		"redirect.consent":    "U heeft de toestemming (met PIN-code) niet op tijd gegeven.",
		"redirect.rejected":   "U heeft geen toestemming gegeven om uw gegevens te delen.",
		"redirect.process":    "De tijdslimiet is bereikt. Probeer het opnieuw en rond het binnen de tijd af.",
		"redirect.cancelled":  "U heeft het inloggen afgebroken.",
		"redirect.denied":     "De toegang is geweigerd.",
		"redirect.technical":  "Er is aan onze kant een technisch probleem opgetreden. Probeer het opnieuw.",
		"redirect.request":    "Het verzoek van de toepassing kan niet worden verwerkt.",
		"redirect.advice":     "U wordt over enkele seconden teruggestuurd naar de toepassing.",
		"redirect.back":       "Terug naar de toepassing",
		"footer.text":         "ondertekenen op afstand",
		"lang.switch":         "English",
		"lang.other":          "en",
	},
	EN: {
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
		"errorpage.ratelimit": "Too many requests came from your address. Please wait a moment and try again.",
		"errorpage.code":      "Error code",
		"redirect.challenge":  "The time to sign in has run out; a sign-in request is valid for a limited time. Please try again and sign in in time.",
		"redirect.email":      "Your email address has not been verified yet. Follow the link in the verification email to activate it.",
		"redirect.consent":    "You did not give your consent (with your PIN) in time.",
		"redirect.rejected":   "You did not agree to share your data.",
		"redirect.process":    "The time limit has been reached. Please try again and finish in time.",
		"redirect.cancelled":  "You cancelled the sign-in.",
		"redirect.denied":     "Access was refused.",
		"redirect.technical":  "A technical problem occurred on our side. Please try again.",
		"redirect.request":    "The application's request cannot be processed.",
		"redirect.advice":     "You will be taken back to the application in a few seconds.",
		"redirect.back":       "Back to the application",
		"footer.text":         "remote signing",
		"lang.switch":         "Nederlands",
		"lang.other":          "nl",
	},
}

// Msg returns the message key in lang; a missing key shows as itself (a
// test makes sure none is missing).
func Msg(lang, key string) string {
	if s, ok := messages[lang][key]; ok {
		return s
	}
	if s, ok := accountMessages[lang][key]; ok {
		return s
	}
	if s, ok := enrollMessages[lang][key]; ok {
		return s
	}
	return key
}

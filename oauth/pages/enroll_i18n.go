package pages

// enrollMessages are the enrollment page's strings in both languages (Msg
// reads them after accountMessages); a test checks both have the same keys
// and that every key the enrollment templates use exists. The bounds they
// state are those of package admin (8–1024 bytes, 4–64 bytes), as `signd
// user add` and set-pin apply them.
var enrollMessages = map[string]map[string]string{
	NL: {
		"enroll.title":          "Account instellen",
		"enroll.heading":        "Account instellen",
		"enroll.intro":          "Kies uw wachtwoord en uw ondertekenings-PIN voor het account",
		"enroll.password":       "Nieuw wachtwoord",
		"enroll.password.hint":  "8 tot 1024 tekens.",
		"enroll.password2":      "Herhaal het wachtwoord",
		"enroll.pin":            "Ondertekenings-PIN",
		"enroll.pin.hint":       "4 tot 64 tekens; u geeft deze PIN bij elke ondertekening.",
		"enroll.pin2":           "Herhaal de PIN",
		"enroll.submit":         "Opslaan",
		"enroll.done":           "Uw wachtwoord en PIN zijn ingesteld. U kunt nu inloggen als",
		"enroll.refused":        "Deze link is ongeldig, al gebruikt of verlopen. Vraag uw beheerder om een nieuwe.",
		"enroll.error.password": "Het wachtwoord moet 8 tot 1024 tekens lang zijn, zonder stuurtekens.",
		"enroll.error.pin":      "De PIN moet 4 tot 64 tekens lang zijn, zonder stuurtekens.",
		"enroll.error.mismatch": "De herhaling komt niet overeen.",
		"enroll.error.totp":     "De code van de authenticator-app klopt niet. Controleer de tijd op uw telefoon en probeer het opnieuw, of laat de code leeg.",
		"enroll.totp":           "Authenticator-app (optioneel)",
		"enroll.totp.hint":      "Wilt u bij het inloggen ook een code van uw telefoon geven? Voer de sleutel hieronder in uw authenticator-app in en vul de code in die de app toont. Laat de code leeg om dit over te slaan.",
		"enroll.totp.secret":    "Sleutel",
		"enroll.totp.uri":       "otpauth-URI",
		"enroll.totp.code":      "Code uit de app",
	},
	EN: {
		"enroll.title":          "Set up your account",
		"enroll.heading":        "Set up your account",
		"enroll.intro":          "Choose your password and your signing PIN for the account",
		"enroll.password":       "New password",
		"enroll.password.hint":  "8 to 1024 characters.",
		"enroll.password2":      "Repeat the password",
		"enroll.pin":            "Signing PIN",
		"enroll.pin.hint":       "4 to 64 characters; you give this PIN for every signature.",
		"enroll.pin2":           "Repeat the PIN",
		"enroll.submit":         "Save",
		"enroll.done":           "Your password and PIN are set. You can now sign in as",
		"enroll.refused":        "This link is invalid, used or expired. Ask your administrator for a new one.",
		"enroll.error.password": "The password must be 8 to 1024 characters long, without control characters.",
		"enroll.error.pin":      "The PIN must be 4 to 64 characters long, without control characters.",
		"enroll.error.mismatch": "The repetition does not match.",
		"enroll.error.totp":     "The authenticator app's code is not right. Check the time on your phone and try again, or leave the code empty.",
		"enroll.totp":           "Authenticator app (optional)",
		"enroll.totp.hint":      "Do you want to give a code from your phone when you sign in, too? Enter the key below in your authenticator app and fill in the code the app shows. Leave the code empty to skip this.",
		"enroll.totp.secret":    "Key",
		"enroll.totp.uri":       "otpauth URI",
		"enroll.totp.code":      "Code from the app",
	},
}

package passwords

import "context"

// Origin is where a request that checks a secret (or acts for a signed-in
// user) comes from, for its audit entry: the door that received it puts it
// into the request's context (WithOrigin), and the Checker reads it
// (OriginFrom) in the write transaction that counts the guess.
type Origin struct {
	// Client is the OAuth client ID of the flow, "" where there is none
	// (the account page).
	Client string
	// IP is the remote address as the server's real-IP policy determines
	// it (echo's Context.RealIP with the daemon's trusted proxies, the
	// address the rate limits key on). WithOrigin keeps an address in its
	// canonical form and anything else as "invalid".
	IP string
	// Door names the entrance (one of the Door constants), recorded as
	// Fields["door"].
	Door string
}

// Doors through which a secret is checked.
const (
	DoorLoginPage      = "login_page"            // the authorization flow's login page (password and TOTP)
	DoorAccountPage    = "account_page"          // the account page's login form
	DoorAuthLogin      = "auth_login"            // CSC v1 §11.1 auth/login (HTTP Basic, no one-time code)
	DoorConsentPage    = "consent_page"          // the consent page's signing PIN
	DoorCredentialsPIN = "credentials_authorize" // CSC v1 §11.6 credentials/authorize with PIN
)

type originKey struct{}

// WithOrigin returns ctx carrying o. Fields of o left empty keep those of
// an Origin ctx already carries, so that an outer layer can set the IP and
// an inner one the client and door.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	prev := OriginFrom(ctx)
	if o.Client == "" {
		o.Client = prev.Client
	}
	if o.IP == "" {
		o.IP = prev.IP
	} else {
		o.IP = AuditIP(o.IP)
	}
	if o.Door == "" {
		o.Door = prev.Door
	}
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom returns the Origin ctx carries, the zero Origin when none.
func OriginFrom(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}

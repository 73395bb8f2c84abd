package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/signd/signd/config/rules"
)

// The sections of the protocol services: oauth.* (the authorization server),
// csc.* (the CSC API) and oidc.* (the OpenID Connect provider). Each has a
// struct, a keys function that Keys() includes, and a checks method.

// OAuthConfig is the oauth.* section.
type OAuthConfig struct {
	CodeTTL        time.Duration `mapstructure:"code_ttl"`
	AccessTokenTTL time.Duration `mapstructure:"access_token_ttl"`
	SADTTL         time.Duration `mapstructure:"sad_ttl"`
	LoginTimeout   time.Duration `mapstructure:"login_timeout"`
	ConsentTimeout time.Duration `mapstructure:"consent_timeout"`
	ProcessTimeout time.Duration `mapstructure:"process_timeout"`
	SessionTTL     time.Duration `mapstructure:"session_ttl"`
	MaxFailures    int           `mapstructure:"max_failures"`
	SweepInterval  time.Duration `mapstructure:"sweep_interval"`
	SweepBatch     int           `mapstructure:"sweep_batch"`
	// Lockout is oauth.lockout.*: how long max_failures wrong passwords
	// in a row lock an account.
	Lockout LockoutConfig `mapstructure:"lockout"`
}

// LockoutConfig is oauth.lockout.* (NIST SP 800-63B §5.2.2): the first
// lock lasts Base, each further one without a successful login between
// twice as long as the one before, at most Max; after PermanentAfter timed
// locks (0: never) the next one is permanent. Signing PINs are not
// affected: they stay locked until an admin unlocks them.
type LockoutConfig struct {
	Base           time.Duration `mapstructure:"base"`
	Max            time.Duration `mapstructure:"max"`
	PermanentAfter int           `mapstructure:"permanent_after"`
}

// CSCConfig is the csc.* section: what /csc/v1/info reports, paging, and
// the size of a signHash request.
type CSCConfig struct {
	Name                string `mapstructure:"name"`
	Logo                string `mapstructure:"logo"`
	Region              string `mapstructure:"region"`
	Lang                string `mapstructure:"lang"`
	Description         string `mapstructure:"description"`
	MaxResultsDefault   int    `mapstructure:"max_results_default"`
	MaxResultsLimit     int    `mapstructure:"max_results_limit"`
	MaxHashesPerRequest int    `mapstructure:"max_hashes_per_request"`
	// AuthLogin mounts auth/login (HTTP Basic with the user's password; it
	// bypasses the consent page, hence off by default).
	AuthLogin bool `mapstructure:"auth_login"`
	// AuthLoginClient is the registered client auth/login's tokens are
	// issued to; required with AuthLogin.
	AuthLoginClient string `mapstructure:"auth_login_client"`
	// RefreshTokenTTL is the lifetime of auth/login's refresh tokens
	// (rememberMe), from the password login; rotation does not extend it.
	RefreshTokenTTL time.Duration `mapstructure:"refresh_token_ttl"`

	Timestamp TimestampConfig `mapstructure:"timestamp"`
	// CertStatus is csc.cert_status.*: the background job that fetches
	// the OCSP and CRL status of the credentials' certificates.
	CertStatus CertStatusConfig `mapstructure:"cert_status"`
}

// TimestampConfig is csc.timestamp.*: signatures/timestamp (CSC v1 §11.10),
// RFC 3161 tokens signed by the TSA key in the HSM.
type TimestampConfig struct {
	Enabled  bool          `mapstructure:"enabled"`
	Policy   string        `mapstructure:"policy"`   // TSA policy OID, dotted
	Accuracy time.Duration `mapstructure:"accuracy"` // claimed accuracy; 0 omits it
	Label    string        `mapstructure:"label"`    // token label of the TSA certificate
}

// CertStatusConfig is csc.cert_status.*.
type CertStatusConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	Refresh time.Duration `mapstructure:"refresh"`
	Timeout time.Duration `mapstructure:"timeout"`
	// OCSPMaxAge is how long after its thisUpdate an OCSP response
	// without nextUpdate is current (RFC 6960 §4.2.2.1).
	OCSPMaxAge time.Duration `mapstructure:"ocsp_max_age"`
}

// OIDCConfig is the oidc.* section.
type OIDCConfig struct {
	ClaimNamespace   string        `mapstructure:"claim_namespace"`
	PairwiseSaltFile string        `mapstructure:"pairwise_salt_file"`
	IDTokenTTL       time.Duration `mapstructure:"id_token_ttl"`
	// SigningAlg is the JWS algorithm of the ID tokens of clients that
	// registered none: RS256, PS256 or ES256.
	SigningAlg string `mapstructure:"signing_alg"`
}

// SigningAlgs returns the values of oidc.signing_alg (the store's
// JWSAlgorithms): asymmetric algorithms with a key in the HSM, never none
// or an HMAC algorithm.
func SigningAlgs() []string { return []string{"RS256", "PS256", "ES256"} }

func serviceKeys() []Key {
	return []Key{
		// oauth
		{Name: "oauth.code_ttl", Default: 60 * time.Second,
			Usage: "lifetime of an authorization code (at most 10m)",
			Doc:   "lifetime of an authorization code (at most 10m)"},
		{Name: "oauth.access_token_ttl", Default: time.Hour,
			Usage: "lifetime of a service or OIDC access token (1m to 24h)",
			Doc:   "lifetime of a service (Bearer) or OIDC access token"},
		{Name: "oauth.sad_ttl", Default: 5 * time.Minute,
			Usage: "lifetime of a SAD from a credential flow (10s to 1h)",
			Doc:   "lifetime of a SAD from a credential flow"},
		{Name: "oauth.login_timeout", Default: 10 * time.Minute,
			Usage: "time from the authorize request to a completed login",
			Doc:   "from the authorize request to a completed login (\"authentication challenge expired\")"},
		{Name: "oauth.consent_timeout", Default: 5 * time.Minute,
			Usage: "time from showing the consent page to its answer",
			Doc:   "from showing the consent page to its answer (\"consent request expired\")"},
		{Name: "oauth.process_timeout", Default: 10 * time.Minute,
			Usage: "time from the authorize request to the redirect back",
			Doc:   "from the authorize request to the redirect back (\"process expired\")"},
		{Name: "oauth.session_ttl", Default: 8 * time.Hour,
			Usage: "lifetime of the login session cookie (single sign-on)",
			Doc:   "lifetime of the login session cookie (single sign-on for `service` and `openid`)"},
		{Name: "oauth.max_failures", Default: 5,
			Usage: "wrong passwords (or PINs) in a row that lock the account for a while (or the PIN until an admin unlocks it)",
			Doc:   "wrong passwords (or PINs) in a row that lock the account for a while (or the PIN until `signd user unlock-pin`) (1–100)"},
		{Name: "oauth.sweep_interval", Default: time.Minute,
			Usage: "how often expired codes, tokens, SAD and requests are removed",
			Doc:   "how often expired codes, tokens, SAD, pending requests and sessions are removed"},
		{Name: "oauth.sweep_batch", Default: 32,
			Usage: "most expired records one sweep transaction removes (bounds how long it holds the write lock)",
			Doc:   "most expired records one sweep transaction removes; the sweeper commits batch after batch and pauses between them, so it never holds the write lock long (1–10000)"},
		{Name: "oauth.lockout.base", Default: time.Minute,
			Usage: "how long the first lock after max_failures wrong passwords lasts; each further one twice as long (1s to 24h)",
			Doc:   "how long the first password lock lasts; each further one without a successful login between lasts twice as long as the one before (1s–24h)"},
		{Name: "oauth.lockout.max", Default: time.Hour,
			Usage: "the longest a lock lasts (oauth.lockout.base to 30 days)",
			Doc:   "the longest a timed password lock lasts (`lockout.base`–30 days)"},
		{Name: "oauth.lockout.permanent_after", Default: 0,
			Usage: "timed locks in a row after which the next lock lasts until an admin unlocks (0 = never, up to 100)",
			Doc:   "timed locks in a row after which the next password lock lasts until `signd user unlock` (`0`: never) (0–100)"},

		// csc
		{Name: "csc.name", Default: "signd",
			Usage: "service name reported by /csc/v1/info (at most 255 bytes)",
			Doc:   "service name in `/csc/v1/info` (at most 255 bytes)"},
		{Name: "csc.logo", Default: "",
			Usage: "URI of the service logo reported by /csc/v1/info",
			Doc:   "logo URI in `/csc/v1/info`"},
		{Name: "csc.region", Default: "NL",
			Usage: "ISO 3166-1 alpha-2 country code reported by /csc/v1/info",
			Doc:   "ISO 3166-1 alpha-2 country in `/csc/v1/info`"},
		{Name: "csc.lang", Default: "en-US",
			Usage: "language of /csc/v1/info texts (RFC 5646)",
			Doc:   "language of `/csc/v1/info` and `credentials/info`"},
		{Name: "csc.description", Default: "signd remote signing service",
			Usage: "description reported by /csc/v1/info",
			Doc:   "description in `/csc/v1/info`"},
		{Name: "csc.max_results_default", Default: 100,
			Usage: "credentials/list page size when maxResults is absent",
			Doc:   "`credentials/list` page size without `maxResults`"},
		{Name: "csc.max_results_limit", Default: 1000,
			Usage: "largest credentials/list page size",
			Doc:   "largest `credentials/list` page (a larger `maxResults` means this)"},
		{Name: "csc.max_hashes_per_request", Default: 100,
			Usage: "most hashes one signatures/signHash request may carry (1 to 10000)",
			Doc:   "most hashes one `signatures/signHash` may carry (1 to 10000); more are refused unread"},
		{Name: "csc.auth_login", Default: false,
			Usage: "serve auth/login (HTTP Basic with the user's password, no consent page)",
			Doc:   "serve `auth/login` (HTTP Basic with the user's password, no consent page); off: 501 and not in `info`"},
		{Name: "csc.auth_login_client", Default: "",
			Usage: "registered client (scope service) that auth/login's tokens are issued to; required with csc.auth_login",
			Doc:   "registered client (scope `service`) that `auth/login`'s tokens are issued to; required with `csc.auth_login`"},
		{Name: "csc.refresh_token_ttl", Default: 24 * time.Hour,
			Usage: "lifetime of auth/login's refresh tokens from the password login (1m to 90 days)",
			Doc:   "lifetime of `auth/login`'s refresh tokens (`rememberMe`), from the password login; rotation does not extend it (1m–90 days)"},
		{Name: "csc.timestamp.enabled", Default: false,
			Usage: "serve signatures/timestamp (RFC 3161 tokens signed by the TSA key in the HSM)",
			Doc:   "serve `signatures/timestamp` (RFC 3161 tokens signed by the TSA key in the HSM); when false the method answers 501 and `info` does not list it"},
		{Name: "csc.timestamp.policy", Default: "",
			Usage: "TSA policy OID of the tokens, dotted (required when csc.timestamp.enabled)",
			Doc:   "TSA policy OID of the tokens, dotted (`1.3.6.1.4.1.99999.1`); required when enabled"},
		{Name: "csc.timestamp.accuracy", Default: time.Second,
			Usage: "accuracy the tokens claim (0, or 1s to 1m: genTime is in whole seconds; 0 omits it)",
			Doc:   "accuracy the tokens claim: `0` omits the field, else 1s–1m (genTime is in whole seconds, so a finer accuracy would be false)"},
		{Name: "csc.timestamp.label", Default: "signd-tsa",
			Usage: "token label of the TSA certificate (signd tsa enroll labels its keys <label>-<id>; reserved: no credential takes it)",
			Doc:   "token label of the TSA certificate; `signd tsa enroll` labels its keys `<label>-<id>`, and only such keys sign tokens: the label and `<label>-…` are reserved (no credential takes them; neither `signd`, `signd-oidc` nor a prefix of `audit.key_label`) (letters, digits, `.`, `_`, `-`; at most 64)"},
		{Name: "csc.cert_status.enabled", Default: true,
			Usage: "check the credentials' certificates against their OCSP responders and CRLs; revoked, suspended or unverifiable ones cannot sign",
			Doc:   "check every credential's chain against the OCSP responders and CRL distribution points its certificates name; a revoked, suspended or unverifiable certificate cannot sign (see [Certificate status](API.md#certificate-status))"},
		{Name: "csc.cert_status.refresh", Default: time.Hour, Reload: true,
			Usage: "how often the OCSP and CRL answers are fetched again (1s to 24h)",
			Doc:   "how often the OCSP and CRL answers are fetched again (at once for a newly imported chain, and a minute — or a tenth of this interval, if shorter — before an answer stops being current) (1s–24h)"},
		{Name: "csc.cert_status.timeout", Default: 10 * time.Second, Reload: true,
			Usage: "time limit of one OCSP or CRL fetch (1s to 1m)",
			Doc:   "time limit of one OCSP or CRL fetch; a host that does not answer within it is not asked again in that refresh (1s–1m)"},
		{Name: "csc.cert_status.ocsp_max_age", Default: time.Hour, Reload: true,
			Usage: "how long after its thisUpdate an OCSP response without nextUpdate is current (1m to 24h)",
			Doc:   "how long after its `thisUpdate` an OCSP response without `nextUpdate` is current (RFC 6960 §4.2.2.1); older ones are refused (1m–24h)"},

		// oidc
		{Name: "oidc.claim_namespace", Default: "com.vendor",
			Usage: "prefix of the namespaced OIDC scopes and claims",
			Doc:   "prefix of the namespaced scopes and claims"},
		{Name: "oidc.pairwise_salt_file", Default: "./var/pairwise.salt",
			Usage: "secret salt of pairwise subjects; created (0600) on first start, never rotate",
			Doc:   "secret salt of the pairwise `sub`: created (32 random bytes, mode 0600) on first start; a file of another size or readable by group/others stops start-up. Never rotate or lose it: every `sub` would change"},
		{Name: "oidc.id_token_ttl", Default: time.Hour,
			Usage: "lifetime of an ID token (1m to 24h)",
			Doc:   "lifetime of an ID token (1m to 24h); also how long a retired signing key stays published"},
		{Name: "oidc.signing_alg", Default: "RS256",
			Usage: "ID-token signature of clients that registered none: RS256, PS256 or ES256 (an RS256 key is kept as well)",
			Doc:   "JWS algorithm of the ID tokens of clients that registered none: `RS256` (RSASSA-PKCS1-v1_5), `PS256` (RSASSA-PSS, 32-byte salt) or `ES256` (ECDSA P-256, the 64-byte R‖S of RFC 7518 §3.4). Exactly these spellings; `none` and HMAC algorithms never. An RS256 key is kept as well (every provider must offer RS256). A token that cannot make or sign with the key stops the start with the algorithm to choose instead"},
	}
}

func within(d, lo, hi time.Duration) string {
	if d < lo || d > hi {
		return fmt.Sprintf("%v is not between %v and %v", d, lo, hi)
	}
	return ""
}

func (o *OAuthConfig) checks() []check {
	return []check{
		{"oauth.code_ttl", within(o.CodeTTL, time.Second, 10*time.Minute)},
		{"oauth.access_token_ttl", within(o.AccessTokenTTL, time.Minute, 24*time.Hour)},
		{"oauth.sad_ttl", within(o.SADTTL, 10*time.Second, time.Hour)},
		{"oauth.login_timeout", within(o.LoginTimeout, 10*time.Second, time.Hour)},
		{"oauth.consent_timeout", within(o.ConsentTimeout, 10*time.Second, time.Hour)},
		{"oauth.process_timeout", within(o.ProcessTimeout, 10*time.Second, time.Hour)},
		{"oauth.session_ttl", within(o.SessionTTL, time.Minute, 30*24*time.Hour)},
		{"oauth.max_failures", rules.Between(o.MaxFailures, 1, 100)},
		{"oauth.sweep_interval", within(o.SweepInterval, time.Second, time.Hour)},
		{"oauth.sweep_batch", rules.Between(o.SweepBatch, 1, 10000)},
		{"oauth.lockout.base", within(o.Lockout.Base, time.Second, 24*time.Hour)},
		{"oauth.lockout.max", o.Lockout.maxProblem()},
		{"oauth.lockout.permanent_after", rules.Between(o.Lockout.PermanentAfter, 0, 100)},
	}
}

// maxProblem checks oauth.lockout.max: at most 30 days, and not shorter
// than oauth.lockout.base.
func (l *LockoutConfig) maxProblem() string {
	if p := within(l.Max, time.Second, 30*24*time.Hour); p != "" {
		return p
	}
	if l.Max < l.Base {
		return fmt.Sprintf("%v is shorter than oauth.lockout.base (%v)", l.Max, l.Base)
	}
	return ""
}

var (
	regionRE    = regexp.MustCompile(`^[A-Z]{2}$`)
	langTagRE   = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
	namespaceRE = regexp.MustCompile(`^[a-z0-9]+(\.[a-z0-9_-]+)*$`)
	clientIDRE  = regexp.MustCompile(`^[!-~]+$`)
)

func matches(re *regexp.Regexp, s, what string) string {
	if !re.MatchString(s) {
		return fmt.Sprintf("%q is not %s", s, what)
	}
	return ""
}

// MaxHashesPerRequest caps csc.max_hashes_per_request. Even at the cap the
// hashes (47 bytes of JSON each) fit the 64 KiB CSC body only partly, so
// it is the count, not the body size, that bounds the work of a request.
const MaxHashesPerRequest = 10000

func (c *CSCConfig) checks() []check {
	name := ""
	if c.Name == "" || len(c.Name) > 255 {
		name = "must be 1 to 255 bytes"
	}
	limit := rules.Between(c.MaxResultsLimit, 1, 10000)
	def := rules.Between(c.MaxResultsDefault, 1, 10000)
	if def == "" && limit == "" && c.MaxResultsDefault > c.MaxResultsLimit {
		def = fmt.Sprintf("%d is larger than csc.max_results_limit (%d)", c.MaxResultsDefault, c.MaxResultsLimit)
	}
	return []check{
		{"csc.name", name},
		{"csc.region", matches(regionRE, c.Region, "an ISO 3166-1 alpha-2 code such as NL")},
		{"csc.lang", matches(langTagRE, c.Lang, "a language tag such as en-US")},
		{"csc.max_results_default", def},
		{"csc.max_results_limit", limit},
		{"csc.max_hashes_per_request", rules.Between(c.MaxHashesPerRequest, 1, MaxHashesPerRequest)},
		{"csc.auth_login_client", c.authLoginClient()},
		{"csc.refresh_token_ttl", within(c.RefreshTokenTTL, time.Minute, 90*24*time.Hour)},
		{"csc.timestamp.policy", c.Timestamp.policyProblem()},
		{"csc.timestamp.accuracy", c.Timestamp.accuracyProblem()},
		{"csc.timestamp.label", matches(tsaLabelRE, c.Timestamp.Label, "1 to 64 letters, digits, '.', '_' or '-'")},
		{"csc.cert_status.refresh", within(c.CertStatus.Refresh, time.Second, 24*time.Hour)},
		{"csc.cert_status.timeout", within(c.CertStatus.Timeout, time.Second, time.Minute)},
		{"csc.cert_status.ocsp_max_age", within(c.CertStatus.OCSPMaxAge, time.Minute, 24*time.Hour)},
	}
}

// authLoginClient checks csc.auth_login_client: required with
// csc.auth_login, and a client ID as the store accepts one.
func (c *CSCConfig) authLoginClient() string {
	switch {
	case c.AuthLoginClient == "" && c.AuthLogin:
		return "required when csc.auth_login is true"
	case c.AuthLoginClient == "":
		return ""
	case len(c.AuthLoginClient) > 128 || !clientIDRE.MatchString(c.AuthLoginClient):
		return fmt.Sprintf("%q is not a client ID (1 to 128 printable ASCII characters, no space)", c.AuthLoginClient)
	}
	return ""
}

// accuracyProblem checks csc.timestamp.accuracy: 0 (omitted) or 1s to
// 1m. genTime is in whole seconds (tsa.Authority: GeneralizedTime without
// fractions, RFC 3161 §2.4.2), so a token claiming less than a second
// would claim what it cannot keep.
func (t *TimestampConfig) accuracyProblem() string {
	if msg := within(t.Accuracy, 0, time.Minute); msg != "" {
		return msg
	}
	if t.Accuracy > 0 && t.Accuracy < time.Second {
		return fmt.Sprintf("%v is finer than genTime, which is in whole seconds: use 0 (omitted) or 1s to 1m", t.Accuracy)
	}
	return ""
}

// tsaLabelChecks checks csc.timestamp.label against the labels signd
// gives its other keys: a key labelled "<label>-…" is a time-stamping key
// (package tsa), so neither a credential's default label (signd-<id>), an
// OIDC key's (signd-oidc-<id>) nor audit.key_label may fall under it.
func (c *Config) tsaLabelChecks() []check {
	l := c.CSC.Timestamp.Label
	msg := ""
	switch audit := c.Audit.Label(); {
	case l == "signd" || l == "signd-oidc":
		msg = fmt.Sprintf("%q would make signd's credential or OIDC keys (signd-<id>, signd-oidc-<id>) time-stamping keys (%s-<id>)", l, l)
	case audit == l || strings.HasPrefix(audit, l+"-"):
		msg = fmt.Sprintf("%q would make the audit key (audit.key_label %q) a time-stamping key (%s-<id>)", l, audit, l)
	}
	return []check{{"csc.timestamp.label", msg}}
}

// tsaLabelRE is csc.timestamp.label: a PKCS#11 label signd can extend with
// "-<id>".
var tsaLabelRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// oidRE is a dotted object identifier (X.660): first arc 0, 1 or 2, no
// leading zeros.
var oidRE = regexp.MustCompile(`^[0-2](\.(0|[1-9][0-9]{0,8}))+$`)

func (t *TimestampConfig) policyProblem() string {
	switch {
	case t.Policy == "" && t.Enabled:
		return "must be set when csc.timestamp.enabled is true"
	case t.Policy == "":
		return ""
	case len(t.Policy) > 200 || !oidRE.MatchString(t.Policy):
		return fmt.Sprintf("%q is not a dotted object identifier such as 1.3.6.1.4.1.99999.1", t.Policy)
	}
	return ""
}

func (o *OIDCConfig) checks() []check {
	return []check{
		{"oidc.claim_namespace", matches(namespaceRE, o.ClaimNamespace, "a dotted lower-case namespace such as com.vendor")},
		{"oidc.pairwise_salt_file", rules.NonEmpty(o.PairwiseSaltFile)},
		{"oidc.id_token_ttl", within(o.IDTokenTTL, time.Minute, 24*time.Hour)},
		{"oidc.signing_alg", signingAlgProblem(o.SigningAlg)},
	}
}

// signingAlgProblem checks oidc.signing_alg: exactly one of SigningAlgs
// (JWS alg values are case-sensitive, RFC 7515 §4.1.1).
func signingAlgProblem(alg string) string {
	if slices.Contains(SigningAlgs(), alg) {
		return ""
	}
	return fmt.Sprintf("%.20q is not one of %s (case-sensitive; none and HMAC algorithms are never allowed)", alg, strings.Join(SigningAlgs(), ", "))
}

package textview

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/signd/signd/admin"
)

// User writes u as text.
func User(w io.Writer, u *admin.UserView) error {
	fmt.Fprintf(w, "username:        %s\n", u.Username)
	fmt.Fprintf(w, "id:              %s\n", u.ID)
	fmt.Fprintf(w, "status:          %s\n", u.Status)
	fmt.Fprintf(w, "email:           %s\n", Dash(u.Email))
	fmt.Fprintf(w, "email verified:  %s\n", YesNo(u.EmailVerified))
	fmt.Fprintf(w, "signing PIN:     %s\n", YesNo(u.HasPIN))
	fmt.Fprintf(w, "TOTP:            %s\n", YesNo(u.HasTOTP))
	fmt.Fprintf(w, "locked:          %s\n", LockState(u))
	fmt.Fprintf(w, "failed logins:   %d\n", u.FailedPasswords)
	fmt.Fprintf(w, "failed PINs:     %d\n", u.FailedPINs)
	keys := make([]string, 0, len(u.Claims))
	for k := range u.Claims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "claim %-10s %s\n", k+":", u.Claims[k])
	}
	if len(u.Proofs) > 0 {
		fmt.Fprintf(w, "proofs:          %s\n", strings.Join(u.Proofs, ", "))
	}
	fmt.Fprintf(w, "created:         %s\n", u.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	if u.Revoked != nil {
		fmt.Fprintf(w, "revoked:         %s\n", u.Revoked)
	}
	if u.EnrollmentExpires != nil {
		fmt.Fprintf(w, "enrollment open: until %s\n", u.EnrollmentExpires.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if u.Enrollment != nil {
		// Shown once: signd keeps only the link's hash.
		fmt.Fprintf(w, "enrollment link: %s\n", u.Enrollment.Link)
	}
	return nil
}

// Credential writes c as text.
func Credential(w io.Writer, c *admin.CredentialView) error {
	fmt.Fprintf(w, "id:         %s\n", c.ID)
	fmt.Fprintf(w, "owner:      %s\n", c.Owner)
	fmt.Fprintf(w, "status:     %s\n", c.Status)
	if c.DisabledBy != "" {
		fmt.Fprintf(w, "disabled:   by %s\n", c.DisabledBy)
	}
	fmt.Fprintf(w, "algorithm:  %s (%d bits)\n", c.Algorithm, c.KeyBits)
	fmt.Fprintf(w, "label:      %s\n", c.Label)
	if c.Description != "" {
		fmt.Fprintf(w, "description: %s\n", c.Description)
	}
	fmt.Fprintf(w, "key id:     %s\n", c.KeyID)
	fmt.Fprintf(w, "auth mode:  %s (multisign %d)\n", c.AuthMode, c.Multisign)
	if c.ChainLength > 0 {
		fmt.Fprintf(w, "subject:    %s\n", c.Subject)
		fmt.Fprintf(w, "issuer:     %s\n", c.Issuer)
		fmt.Fprintf(w, "serial:     %s\n", c.Serial)
		fmt.Fprintf(w, "valid:      %s to %s\n", c.NotBefore.Format("2006-01-02T15:04:05Z"), c.NotAfter.Format("2006-01-02T15:04:05Z"))
		fmt.Fprintf(w, "chain:      %d certificates\n", c.ChainLength)
	} else {
		fmt.Fprintln(w, "chain:      none (import one with signd credential import-cert)")
	}
	if c.Revoked != nil {
		fmt.Fprintf(w, "revoked:    %s\n", c.Revoked)
	}
	return nil
}

// HSMInfo writes v as text.
func HSMInfo(w io.Writer, v *admin.HSMInfoView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if c := v.Capabilities; c != nil {
		fmt.Fprintf(tw, "module:\t%s\n", c.Module)
		fmt.Fprintf(tw, "library:\t%s %s %s (Cryptoki %s)\n", c.LibraryVendor, c.LibraryDescription, c.LibraryVersion, c.CryptokiVersion)
		fmt.Fprintf(tw, "token:\t%q: %s %s, serial %s, hardware %s, firmware %s\n", c.Label, c.Manufacturer, c.Model, c.Serial, c.HardwareVersion, c.FirmwareVersion)
		fmt.Fprintf(tw, "PIN length:\t%d to %d\n", c.MinPINLen, c.MaxPINLen)
		fmt.Fprintf(tw, "sessions:\t%s (read-write %s)\n", limitText(c.MaxSessions), limitText(c.MaxRWSessions))
		fmt.Fprintf(tw, "flags:\t%s\n", strings.Join(c.Flags, " "))
		fmt.Fprintf(tw, "profile:\t%s\n", c.Profile)
		for _, m := range c.Mechanisms {
			state := "missing"
			if m.Present {
				var uses []string
				if m.Sign {
					uses = append(uses, "sign")
				}
				if m.GenerateKeyPair {
					uses = append(uses, "generate key pair")
				}
				state = fmt.Sprintf("%d to %d bits, %s", m.MinKeySize, m.MaxKeySize, strings.Join(uses, ", "))
			}
			fmt.Fprintf(tw, "%s:\t%s\n", m.Name, state)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d keys, %d not frozen by the token\n", len(v.Keys), v.Unfrozen)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tLABEL\tNOT FROZEN")
	for _, k := range v.Keys {
		defects := "-"
		if len(k.Defects) > 0 {
			defects = strings.Join(k.Defects, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, k.Type, k.Label, defects)
	}
	return tw.Flush()
}

// limitText prints a token limit; 0 is none known.
func limitText(n uint) string {
	if n == 0 {
		return "no limit given"
	}
	return fmt.Sprint(n)
}

// OIDCKey writes k as text.
func OIDCKey(w io.Writer, k *admin.OIDCKeyView) error {
	fmt.Fprintf(w, "kid:        %s\n", k.KID)
	fmt.Fprintf(w, "state:      %s\n", k.State)
	fmt.Fprintf(w, "algorithm:  %s\n", k.Algorithm)
	fmt.Fprintf(w, "label:      %s\n", k.Label)
	fmt.Fprintf(w, "key id:     %s\n", k.KeyID)
	fmt.Fprintf(w, "created:    %s\n", Stamp(&k.CreatedAt))
	if k.ActivatedAt != nil {
		fmt.Fprintf(w, "activated:  %s\n", Stamp(k.ActivatedAt))
	}
	return nil
}

// Stamp formats an optional time in UTC, "-" when absent.
func Stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// Client writes c as text.
func Client(w io.Writer, c *admin.ClientView) error {
	fmt.Fprintf(w, "client_id:         %s\n", c.ID)
	fmt.Fprintf(w, "name:              %s\n", c.Name)
	fmt.Fprintf(w, "scopes:            %s\n", strings.Join(c.Scopes, " "))
	fmt.Fprintf(w, "require PKCE:      %s\n", YesNo(c.RequirePKCE))
	fmt.Fprintf(w, "sector identifier: %s\n", Dash(c.SectorIdentifier))
	if c.IDTokenAlg != "" {
		fmt.Fprintf(w, "ID-token alg:      %s\n", c.IDTokenAlg)
	}
	for _, u := range c.RedirectURIs {
		fmt.Fprintf(w, "redirect_uri:      %s\n", u)
	}
	return nil
}

// Identity writes id as text.
func Identity(w io.Writer, id *admin.Identity) error {
	roles := make([]string, len(id.Roles))
	for i, r := range id.Roles {
		roles[i] = string(r)
	}
	if len(roles) == 0 {
		roles = []string{"none"}
	}
	fmt.Fprintf(w, "actor:    %s\n", id.Actor)
	fmt.Fprintf(w, "roles:    %s\n", strings.Join(roles, ", "))
	fmt.Fprintf(w, "groups:   %s\n", Dash(strings.Join(id.Groups, ", ")))
	if id.SeparationOfDuties {
		fmt.Fprintln(w, "duties:   separated (admin.roles)")
	} else {
		fmt.Fprintln(w, "duties:   not separated: admin.roles is not set, so every admin socket user holds every role")
	}
	switch id.Via {
	case "daemon":
		fmt.Fprintln(w, "answered: by the daemon, for this process on its admin socket")
	default:
		fmt.Fprintln(w, "answered: by this command (no daemon runs), as for the commands on the store file")
	}
	return nil
}

// LockState says what is locked: the password for a while ("password
// until 2026-11-27T18:31:00Z") or until an admin unlocks it ("password
// (permanent)"), and the signing PIN (always until an admin unlocks it).
func LockState(u *admin.UserView) string {
	var locks []string
	switch {
	case u.PasswordLocked && u.LockedUntil != nil:
		locks = append(locks, "password until "+u.LockedUntil.UTC().Format(time.RFC3339))
	case u.PasswordLocked:
		locks = append(locks, "password (permanent)")
	}
	if u.PINLocked {
		locks = append(locks, "PIN")
	}
	if len(locks) == 0 {
		return "no"
	}
	return strings.Join(locks, ", ")
}

// Dash is s, or "-" when it is empty.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// YesNo is "yes" or "no".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// AuditKey writes the audit key: its label, HSM ID, algorithm, the
// checkpoints' origin and the verifier key witnesses and `signd audit
// verify --key` take.
func AuditKey(w io.Writer, v *admin.AuditKeyView) error {
	_, err := fmt.Fprintf(w, "label:        %s\nid:           %s\nalgorithm:    %s\norigin:       %s\nverifier key: %s\n", v.Label, v.ID, v.Algorithm, v.Origin, v.VerifierKey)
	return err
}

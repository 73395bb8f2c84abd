package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/mdp/qrterminal/v3"
	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

// userTOTPCmd is `signd user totp enroll|remove USERNAME`.
func (a *app) userTOTPCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "totp", Short: "Manage a user's one-time codes (TOTP, RFC 6238) for the login page"}
	var issuer string
	enroll := &cobra.Command{
		Use:   "enroll USERNAME [--issuer NAME]",
		Short: "Generate a TOTP secret and print it as an otpauth:// URI and a QR code (revokes the user's tokens and sessions)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, en *admin.TOTPEnrollment) error {
					fmt.Fprintf(w, "Scan this QR code with an authenticator app (shown once):\n\n")
					qrterminal.GenerateWithConfig(en.URI, qrterminal.Config{
						Level: qrterminal.M, Writer: w, HalfBlocks: true,
						BlackChar: qrterminal.BLACK_BLACK, WhiteBlackChar: qrterminal.WHITE_BLACK,
						WhiteChar: qrterminal.WHITE_WHITE, BlackWhiteChar: qrterminal.BLACK_WHITE, QuietZone: 2,
					})
					fmt.Fprintf(w, "\nuri:      %s\n", en.URI)
					fmt.Fprintf(w, "secret:   %s\n", en.Secret)
					fmt.Fprintf(w, "username: %s\n", en.Username)
					if en.Revoked != nil {
						fmt.Fprintf(w, "revoked:  %s\n", en.Revoked)
					}
					return nil
				})(s.EnrollTOTP(ctx, by, admin.EnrollTOTPRequest{Username: args[0], Issuer: issuer}))
			})
		},
	}
	enroll.Flags().StringVar(&issuer, "issuer", "signd", "service name the authenticator app shows")
	remove := oneArg(a, "remove USERNAME", "Remove a user's TOTP: the login asks for the password alone", textview.User, admin.Service.RemoveTOTP)
	cmd.AddCommand(enroll, remove)
	return cmd
}

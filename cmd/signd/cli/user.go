package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/cliinput"
	"github.com/signd/signd/cmd/signd/textview"
)

func (a *app) userCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Manage users (login password, signing PIN, identity attributes)"}

	var add struct {
		passwordFile, pinFile, email, claimsFile string
		emailVerified, enroll                    bool
	}
	addCmd := &cobra.Command{
		Use:   "add USERNAME {--password-file F [--pin-file F] | --enroll} [--email E] [--email-verified] [--claims FILE.json]",
		Short: "Create a user",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cliinput.OneStdin(add.passwordFile, add.pinFile, add.claimsFile); err != nil {
				return err
			}
			req := admin.AddUserRequest{Username: args[0], Email: add.email, EmailVerified: add.emailVerified, Enroll: add.enroll}
			var err error
			if !add.enroll {
				if req.Password, err = a.readSecretFile("password", add.passwordFile); err != nil {
					return err
				}
			}
			if add.pinFile != "" {
				if req.PIN, err = a.readSecretFile("PIN", add.pinFile); err != nil {
					return err
				}
			}
			if add.claimsFile != "" {
				data, err := a.readFile("claims", add.claimsFile, 64<<10)
				if err != nil {
					return err
				}
				if req.Claims, err = cliinput.ParseClaims(data); err != nil {
					return fmt.Errorf("claims file %s: %w", add.claimsFile, err)
				}
			}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.User)(s.AddUser(ctx, by, req))
			})
		},
	}
	f := addCmd.Flags()
	f.StringVar(&add.passwordFile, "password-file", "", "file holding the login password (- = stdin)")
	f.StringVar(&add.pinFile, "pin-file", "", "file holding the signing PIN (- = stdin)")
	f.StringVar(&add.email, "email", "", "email address")
	f.BoolVar(&add.emailVerified, "email-verified", false, "the email address has been verified")
	f.StringVar(&add.claimsFile, "claims", "", "JSON file with identity attributes (see docs/CLI.md)")
	f.BoolVar(&add.enroll, "enroll", false, "create the user without password and PIN, with a one-time enrollment link where the user sets them (admin.enrollment_ttl)")
	addCmd.MarkFlagsOneRequired("password-file", "enroll")
	addCmd.MarkFlagsMutuallyExclusive("password-file", "enroll")
	addCmd.MarkFlagsMutuallyExclusive("pin-file", "enroll")

	listCmd := &cobra.Command{
		Use: "list", Short: "List users", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				us, err := s.ListUsers(ctx, by)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(us)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "USERNAME\tSTATUS\tEMAIL\tPIN\tLOCKED")
				for _, u := range us {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Username, u.Status, textview.Dash(u.Email), textview.YesNo(u.HasPIN), textview.LockState(&u))
				}
				return tw.Flush()
			})
		},
	}

	simple := func(use, short string, fn func(s admin.Service, ctx context.Context, by admin.Principal, name string) (*admin.UserView, error)) *cobra.Command {
		return oneArg(a, use+" USERNAME", short, textview.User, fn)
	}
	showCmd := simple("show", "Show a user", admin.Service.ShowUser)
	disableCmd := simple("disable", "Disable a user (no login, no signing) and revoke everything issued to them", func(s admin.Service, ctx context.Context, by admin.Principal, n string) (*admin.UserView, error) {
		return s.SetUserStatus(ctx, by, n, false)
	})
	enableCmd := simple("enable", "Enable a disabled user", func(s admin.Service, ctx context.Context, by admin.Principal, n string) (*admin.UserView, error) {
		return s.SetUserStatus(ctx, by, n, true)
	})
	unlockCmd := simple("unlock", "Clear the password lockout and failure counter (administrator)", admin.Service.UnlockUser)
	enrollLinkCmd := simple("enroll-link", "A new one-time enrollment link for a user without password and PIN; it replaces the open one (administrator)", admin.Service.IssueEnrollment)
	unlockPINCmd := simple("unlock-pin", "Clear the signing PIN lockout and failure counter (security officer)", admin.Service.UnlockPIN)

	secretCmd := func(use, what string, set func(ctx context.Context, s admin.Service, by admin.Principal, r admin.SetSecretRequest) (*admin.UserView, error)) *cobra.Command {
		var file string
		c := &cobra.Command{
			Use: use + " USERNAME --" + what + "-file F", Short: "Replace a user's " + what + " (also clears its lockout)", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				secret, err := a.readSecretFile(what, file)
				if err != nil {
					return err
				}
				return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
					return printer(a, textview.User)(set(ctx, s, by, admin.SetSecretRequest{Username: args[0], Secret: secret}))
				})
			},
		}
		c.Flags().StringVar(&file, what+"-file", "", "file holding the new "+what+" (- = stdin)")
		_ = c.MarkFlagRequired(what + "-file")
		return c
	}
	setPassword := secretCmd("set-password", "password", func(ctx context.Context, s admin.Service, by admin.Principal, r admin.SetSecretRequest) (*admin.UserView, error) {
		return s.SetPassword(ctx, by, r)
	})
	setPIN := secretCmd("set-pin", "pin", func(ctx context.Context, s admin.Service, by admin.Principal, r admin.SetSecretRequest) (*admin.UserView, error) {
		return s.SetPIN(ctx, by, r)
	})

	removeCmd := &cobra.Command{
		Use: "remove USERNAME", Short: "Remove a user who owns no credentials, revoking everything issued to them", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				res, err := s.RemoveUser(ctx, by, args[0])
				if err != nil {
					return err
				}
				return a.printRemoved("user", res)
			})
		},
	}

	cmd.AddCommand(addCmd, listCmd, showCmd, disableCmd, enableCmd, unlockCmd, unlockPINCmd, enrollLinkCmd, setPassword, setPIN, removeCmd, a.addProofCmd(),
		a.userTOTPCmd())
	return cmd
}

// printRemoved reports a removed user or client and what was revoked.
func (a *app) printRemoved(what string, res *admin.RemoveResult) error {
	if a.jsonOut {
		return a.printJSON(res)
	}
	fmt.Fprintf(a.Stdout, "removed %s %s\n", what, res.Removed)
	fmt.Fprintf(a.Stdout, "revoked: %s\n", &res.Revoked)
	return nil
}

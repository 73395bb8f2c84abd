package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

func (a *app) credentialCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "credential", Short: "Manage signing credentials (HSM key pairs and certificates)"}

	var create struct {
		user, algo, keyType, label, subject, csrOut, authMode, description string
		multisign                                                          int
	}
	createCmd := &cobra.Command{
		Use:   "create --user USERNAME [--key-type ec-p256|ec-p384|ec-p521|rsa-2048|rsa-3072|rsa-4096] [--label L] [--subject DN] [--csr-out FILE] [--multisign N] [--auth-mode oauth2code|explicit] [--description TEXT]",
		Short: "Generate a key pair in the token and a CSR; prints the credential ID as the last line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			algo, err := a.keyTypeFlag(cmd, create.algo, create.keyType)
			if err != nil {
				return err
			}
			if create.multisign < 1 {
				return fmt.Errorf("--multisign must be 1 to 1000")
			}
			req := admin.CreateCredentialRequest{User: create.user, Algo: algo, Label: create.label, Subject: create.subject,
				Multisign: create.multisign, AuthMode: create.authMode, Description: create.description}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				res, err := s.CreateCredential(ctx, by, req)
				if err != nil {
					return err
				}
				switch create.csrOut {
				case "":
				case "-":
					fmt.Fprint(a.Stdout, res.CSRPEM)
				default:
					if err := os.WriteFile(create.csrOut, []byte(res.CSRPEM), 0o644); err != nil {
						return fmt.Errorf("credential %s created (pending) but the CSR could not be written: %w", res.Credential.ID, err)
					}
				}
				if a.jsonOut {
					return a.printJSON(res)
				}
				c := res.Credential
				fmt.Fprintf(a.Stderr, "Created credential %s for %s (%s, HSM label %q), status %s until `signd credential import-cert %s --chain FILE.pem`.\n",
					c.ID, c.Owner, c.Algorithm, c.Label, c.Status, c.ID)
				fmt.Fprintln(a.Stdout, c.ID)
				return nil
			})
		},
	}
	f := createCmd.Flags()
	f.StringVar(&create.user, "user", "", "owner of the credential")
	addKeyTypeFlags(f, &create.keyType, &create.algo, "rsa-2048", "ec-p256, ec-p384, ec-p521, rsa-2048, rsa-3072 or rsa-4096")
	f.StringVar(&create.label, "label", "", "HSM key label (default signd-<credential ID>)")
	f.StringVar(&create.subject, "subject", "", `CSR subject, RFC 4514 (default "CN=<username>")`)
	f.StringVar(&create.csrOut, "csr-out", "", "write the CSR (PEM) to FILE (- = stdout)")
	f.IntVar(&create.multisign, "multisign", 1, "signatures one authorization (SAD) may cover, 1–1000 (CSC multisign)")
	f.StringVar(&create.authMode, "auth-mode", "oauth2code", "how signatures are authorized: oauth2code (consent page) or explicit (credentials/authorize with the PIN)")
	f.StringVar(&create.description, "description", "", "what the owner sees the key as on the signing consent and account pages, at most 200 printable characters (default the certificate's CN)")
	_ = createCmd.MarkFlagRequired("user")

	var chainFile string
	importCmd := &cobra.Command{
		Use:   "import-cert ID --chain FILE.pem",
		Short: "Attach a certificate chain (leaf first, root last) and enable the credential",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := a.readFile("chain", chainFile, 1<<20)
			if err != nil {
				return err
			}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.Credential)(s.ImportCertificate(ctx, by, admin.ImportCertificateRequest{ID: args[0], ChainPEM: string(data)}))
			})
		},
	}
	importCmd.Flags().StringVar(&chainFile, "chain", "", "PEM file: leaf certificate first, root last (- = stdin)")
	_ = importCmd.MarkFlagRequired("chain")

	var listUser string
	listCmd := &cobra.Command{
		Use: "list [--user U]", Short: "List credentials", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, cs []admin.CredentialView) error {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tOWNER\tSTATUS\tALGORITHM\tLABEL\tSUBJECT")
					for _, c := range cs {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Owner, c.Status, c.Algorithm, c.Label, textview.Dash(c.Subject))
					}
					return tw.Flush()
				})(s.ListCredentials(ctx, by, listUser))
			})
		},
	}
	listCmd.Flags().StringVar(&listUser, "user", "", "only this user's credentials")

	byID := func(use, short string, fn func(s admin.Service, ctx context.Context, by admin.Principal, id string) (*admin.CredentialView, error)) *cobra.Command {
		return oneArg(a, use+" ID", short, textview.Credential, fn)
	}
	showCmd := byID("show", "Show a credential", admin.Service.ShowCredential)
	disableCmd := byID("disable", "Disable a credential (signHash refuses it) and revoke its SADs, codes and pending requests", func(s admin.Service, ctx context.Context, by admin.Principal, id string) (*admin.CredentialView, error) {
		return s.SetCredentialStatus(ctx, by, id, false)
	})
	enableCmd := byID("enable", "Enable a credential that has a certificate", func(s admin.Service, ctx context.Context, by admin.Principal, id string) (*admin.CredentialView, error) {
		return s.SetCredentialStatus(ctx, by, id, true)
	})
	var auth struct {
		multisign int
		authMode  string
	}
	authCmd := &cobra.Command{
		Use:   "set-auth ID [--multisign N] [--auth-mode oauth2code|explicit]",
		Short: "Change how a credential's signatures are authorized; revokes its outstanding SADs, codes and pending requests",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if auth.multisign == 0 && cmd.Flags().Changed("multisign") {
				return fmt.Errorf("--multisign must be 1 to 1000")
			}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.Credential)(s.SetCredentialAuth(ctx, by, admin.SetCredentialAuthRequest{ID: args[0], Multisign: auth.multisign, AuthMode: auth.authMode}))
			})
		},
	}
	authCmd.Flags().IntVar(&auth.multisign, "multisign", 0, "signatures one authorization (SAD) may cover, 1–1000")
	authCmd.Flags().StringVar(&auth.authMode, "auth-mode", "", "oauth2code or explicit")
	removeCmd := &cobra.Command{
		Use:   "remove ID",
		Short: "Destroy a credential's key pair and certificate in the token, revoke its SADs, codes and pending requests, delete it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, res *admin.RemoveCredentialResult) error {
					destroyed := "nothing (the key pair was already gone)"
					if len(res.Destroyed) > 0 {
						destroyed = strings.Join(res.Destroyed, ", ")
					}
					fmt.Fprintf(w, "removed credential %s of %s\n", res.Removed, res.Owner)
					fmt.Fprintf(w, "destroyed in the HSM: %s (key id %s, label %q)\n", destroyed, res.KeyID, res.Label)
					fmt.Fprintf(w, "revoked: %s\n", &res.Revoked)
					return nil
				})(s.RemoveCredential(ctx, by, args[0]))
			})
		},
	}
	cmd.AddCommand(createCmd, importCmd, listCmd, showCmd, disableCmd, enableCmd, authCmd, removeCmd)
	return cmd
}

// addKeyTypeFlags registers the key type flag of credential create and
// tsa enroll: --key-type, and --algo, its older name, hidden from the help
// and still accepted (keyTypeFlag).
func addKeyTypeFlags(f *pflag.FlagSet, keyType, algo *string, def, values string) {
	f.StringVar(keyType, "key-type", def, "key type: "+values)
	f.StringVar(algo, "algo", def, "deprecated: the older name of --key-type")
	_ = f.MarkHidden("algo")
}

// keyTypeFlag returns the key type of credential create and tsa enroll:
// --key-type, or --algo, its older name, with a note on stderr (stdout
// carries the CSR, the ID and --json). Both given must agree; an empty
// value is refused rather than taken for the default.
func (a *app) keyTypeFlag(cmd *cobra.Command, algo, keyType string) (string, error) {
	f := cmd.Flags()
	for name, v := range map[string]string{"key-type": keyType, "algo": algo} {
		if f.Changed(name) && v == "" {
			return "", fmt.Errorf("--%s is empty: give a key type", name)
		}
	}
	if !f.Changed("algo") {
		return keyType, nil
	}
	if f.Changed("key-type") && algo != keyType {
		return "", fmt.Errorf("--key-type %q and --algo %q disagree; give one", keyType, algo)
	}
	fmt.Fprintln(a.Stderr, "signd: --algo is deprecated; use --key-type")
	return algo, nil
}

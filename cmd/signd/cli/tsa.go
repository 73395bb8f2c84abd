package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
)

// tsaCmd is `signd tsa`: the time-stamping authority's key of
// signatures/timestamp (csc.timestamp.enabled).
func (a *app) tsaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tsa",
		Short: "Manage the time-stamping key (RFC 3161, signatures/timestamp)",
		Long: `Time-stamp tokens are signed by a key pair generated inside the HSM.

  enroll       generate the key pair and print its key ID and a CSR
  import-cert  store the CA's certificate for it on the token

The certificate must carry exactly one extended key usage, id-kp-timeStamping,
marked critical (RFC 3161 §2.3); anything else is refused. The newest valid
certificate signs; the daemon picks up a new one within a minute.`,
	}
	var enroll struct{ algo, keyType, subject, csrOut string }
	enrollCmd := &cobra.Command{
		Use:   "enroll [--key-type rsa-2048|rsa-3072|rsa-4096] [--subject DN] [--csr-out FILE]",
		Short: "Generate the time-stamping key pair in the token and a CSR; prints the key ID as the last line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			algo, err := a.keyTypeFlag(cmd, enroll.algo, enroll.keyType)
			if err != nil {
				return err
			}
			req := admin.EnrollTSARequest{Algo: algo, Subject: enroll.subject}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				res, err := s.EnrollTSA(ctx, by, req)
				if err != nil {
					return err
				}
				switch enroll.csrOut {
				case "":
				case "-":
					fmt.Fprint(a.Stdout, res.CSRPEM)
				default:
					if err := os.WriteFile(enroll.csrOut, []byte(res.CSRPEM), 0o644); err != nil {
						return fmt.Errorf("TSA key %s generated but the CSR could not be written: %w", res.KeyID, err)
					}
				}
				if a.jsonOut {
					return a.printJSON(res)
				}
				fmt.Fprintf(a.Stderr, "Generated TSA key %s (HSM label %q); have the CA certify the CSR with a critical id-kp-timeStamping extended key usage, then `signd tsa import-cert --key-id %s --cert FILE.pem`.\n",
					res.KeyID, res.Label, res.KeyID)
				fmt.Fprintln(a.Stdout, res.KeyID)
				return nil
			})
		},
	}
	f := enrollCmd.Flags()
	addKeyTypeFlags(f, &enroll.keyType, &enroll.algo, "rsa-3072", "rsa-2048, rsa-3072 or rsa-4096")
	f.StringVar(&enroll.subject, "subject", "CN=signd TSA", "CSR subject, RFC 4514")
	f.StringVar(&enroll.csrOut, "csr-out", "", "write the CSR (PEM) to FILE (- = stdout)")

	var keyID, certFile string
	importCmd := &cobra.Command{
		Use:   "import-cert --key-id ID --cert FILE.pem",
		Short: "Store the TSA certificate (PEM; issuers after it are checked) on the token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := a.readFile("cert", certFile, 1<<20)
			if err != nil {
				return err
			}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				v, err := s.ImportTSACertificate(ctx, by, admin.ImportTSACertificateRequest{KeyID: keyID, CertPEM: string(data)})
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(v)
				}
				fmt.Fprintf(a.Stdout, "key id:     %s\nsubject:    %s\nserial:     %s\nnot after:  %s\n", v.KeyID, v.Subject, v.Serial, v.NotAfter)
				return nil
			})
		},
	}
	importCmd.Flags().StringVar(&keyID, "key-id", "", "key ID printed by signd tsa enroll")
	importCmd.Flags().StringVar(&certFile, "cert", "", "PEM file: the TSA certificate first, its issuers after it (- = stdin)")
	_ = importCmd.MarkFlagRequired("key-id")
	_ = importCmd.MarkFlagRequired("cert")

	cmd.AddCommand(enrollCmd, importCmd)
	return cmd
}

package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
)

// hsmCmd is `signd hsm`: what the PKCS#11 token is and can do.
func (a *app) hsmCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "hsm", Short: "Inspect the PKCS#11 token"}
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Show the token's capabilities and whether it freezes its keys",
		Long: `Shows what the token said of itself when it was opened (module, Cryptoki
version, manufacturer, model, firmware, PIN lengths, session limits, the
mechanisms signd uses with their key sizes, the key-template profile) and
every key on it, each with what the token does not freeze: a label a
C_SetAttributeValue can rewrite, or a usage beyond signing (decrypt,
unwrap, derive). Asks the running daemon when one listens on the admin
socket, else opens the token itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				info, err := s.HSMInfo(ctx, by)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(info)
				}
				return a.printHSMInfo(info)
			})
		},
	})
	return cmd
}

func (a *app) printHSMInfo(v *admin.HSMInfoView) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
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
	fmt.Fprintf(a.stdout, "\n%d keys, %d not frozen by the token\n", len(v.Keys), v.Unfrozen)
	tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
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

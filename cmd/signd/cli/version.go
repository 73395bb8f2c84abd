package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/signd/signd/cmd/signd/version"
)

// versionCmd is `signd version`: the build, and the PKCS#11 module of the
// configuration named with --config.
func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show the version, commit, build date and Go version (and the PKCS#11 module of --config)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := version.Info()
			if a.cfgFile != "" {
				cfg, err := a.loadConfig(cmd)
				if err != nil {
					return err
				}
				b.Module = cfg.PKCS11.Module
			}
			if a.jsonOut {
				return a.printJSON(b)
			}
			fmt.Fprintln(a.Stdout, b.String())
			if b.Module != "" {
				fmt.Fprintln(a.Stdout, "pkcs11 module:", b.Module)
			}
			return nil
		},
	}
}

package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

func (a *app) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show how the admin service names you (the audit log's actor) and the trusted roles you hold",
		Long: "Show how the admin service names you (the audit log's actor), the groups it looked up and the trusted roles\n" +
			"(admin.roles) you hold. While signd serve runs, the daemon answers for the admin socket's peer; otherwise\n" +
			"this process is judged as the commands on the store file judge it. Needs no role.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, remote, err := a.dialAdmin(cmd)
			if err != nil {
				return err
			}
			var id *admin.Identity
			if remote != nil {
				if id, err = remote.WhoAmI(cmd.Context()); err != nil {
					return err
				}
			} else {
				roles, err := AdminRoles(cfg, nil)
				if err != nil {
					return err
				}
				local := roles.IdentifyIDs(uint32(os.Geteuid()), uint32(os.Getegid()), "store")
				id = &local
			}
			if a.jsonOut {
				return a.printJSON(id)
			}
			return textview.Identity(a.Stdout, id)
		},
	}
}

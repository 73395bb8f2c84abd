package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
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
				roles, err := adminRoles(cfg, nil)
				if err != nil {
					return err
				}
				local := roles.IdentifyIDs(uint32(os.Geteuid()), uint32(os.Getegid()), "store")
				id = &local
			}
			if a.jsonOut {
				return a.printJSON(id)
			}
			return a.printIdentity(id)
		},
	}
}

func (a *app) printIdentity(id *admin.Identity) error {
	w := a.stdout
	roles := make([]string, len(id.Roles))
	for i, r := range id.Roles {
		roles[i] = string(r)
	}
	if len(roles) == 0 {
		roles = []string{"none"}
	}
	fmt.Fprintf(w, "actor:    %s\n", id.Actor)
	fmt.Fprintf(w, "roles:    %s\n", strings.Join(roles, ", "))
	fmt.Fprintf(w, "groups:   %s\n", dash(strings.Join(id.Groups, ", ")))
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

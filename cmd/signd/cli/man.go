package cli

import (
	"fmt"
	"os"

	"github.com/signd/signd/cmd/signd/version"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manCmd writes a man page per command (signd.1, signd-user-add.1, …) from
// the command tree (cobra/doc). Hidden: `make deb` installs its output
// under /usr/share/man/man1.
func (a *app) manCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages of every command into DIR (an existing directory)",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			fi, err := os.Stat(dir)
			if err != nil {
				return fmt.Errorf("man: %w", err)
			}
			if !fi.IsDir() {
				return fmt.Errorf("man: %s is not a directory", dir)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // the same pages from the same source, whenever built
			header := &doc.GenManHeader{Title: "SIGND", Section: "1", Source: "signd " + version.Info().Version, Manual: "signd manual"}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("man: %w", err)
			}
			return nil
		},
	}
}

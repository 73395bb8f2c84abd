package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/signd/signd/config"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Check the configuration"}
	cmd.AddCommand(a.configCheckCmd(), a.configExampleCmd())
	return cmd
}

// ConfigCheckResult is `signd config check --json`'s answer.
type ConfigCheckResult struct {
	Source   string          `json:"source"`
	OK       bool            `json:"ok"`
	Problems []ConfigProblem `json:"problems,omitempty"`
}

// ConfigProblem is one problem of ConfigCheckResult: the key and what is
// wrong with it.
type ConfigProblem struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

// configCheckCmd loads the configuration as serve would (file,
// environment, flags) without opening the token or the store, and lists
// every problem at once; it parses the page templates and reads the logo
// as serve does (pagesProblem).
func (a *app) configCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration (file, SIGND_* environment, flags) and list every problem at once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd)
			if err == nil {
				err = a.pagesProblem(cfg)
			}
			var cerr *config.Error
			switch {
			case err == nil:
				source := cfg.Source()
				if source == "" {
					source = "defaults (no file at " + strings.Join(config.DefaultSearchPaths(), " or ") + ")"
				}
				if a.jsonOut {
					return a.printJSON(ConfigCheckResult{Source: cfg.Source(), OK: true})
				}
				fmt.Fprintf(a.Stdout, "ok: %s\n", source)
				return nil
			case errors.As(err, &cerr):
				if a.jsonOut {
					res := ConfigCheckResult{Source: cerr.Source}
					for _, p := range cerr.Problems {
						res.Problems = append(res.Problems, ConfigProblem{Key: p.Key, Message: p.Msg})
					}
					if err := a.printJSON(res); err != nil {
						return err
					}
				}
				source := cerr.Source
				if source == "" {
					source = "the configuration"
				}
				return fmt.Errorf("%s: %d problem(s):\n%w", source, len(cerr.Problems), err)
			default:
				return err
			}
		},
	}
}

// pagesProblem builds the pages as serve does: a template override that
// does not parse or render, or a logo that is not what its name says, is
// a problem of its ui.* key (the message names the file and line).
func (a *app) pagesProblem(cfg *config.Config) error {
	err := a.Pages(cfg)
	if err == nil {
		return nil
	}
	key, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok || !strings.HasPrefix(key, "ui.") {
		key, msg = "", err.Error()
	}
	return &config.Error{Source: cfg.Source(), Problems: []config.Problem{{Key: key, Msg: msg}}}
}

// configExampleCmd prints config.Example: every key, commented out with
// its default. Hidden: `make deb` writes the package's /etc/signd/signd.yaml
// with it, with the package's paths set by --set.
func (a *app) configExampleCmd() *cobra.Command {
	var sets []string
	cmd := &cobra.Command{
		Use:    "example",
		Short:  "Print a configuration file naming every key, commented out with its default",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set := map[string]string{}
			for _, s := range sets {
				key, value, ok := strings.Cut(s, "=")
				if !ok || key == "" {
					return fmt.Errorf("--set %q: want key=value", s)
				}
				if _, dup := set[key]; dup {
					return fmt.Errorf("--set %s given twice", key)
				}
				set[key] = value
			}
			text, err := config.Example(set)
			if err != nil {
				return err
			}
			_, err = a.Stdout.Write(text)
			return err
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "write this string key uncommented with this value (key=value; repeatable)")
	return cmd
}

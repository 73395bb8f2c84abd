package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Stamped by `make build` (-ldflags -X main.version=… -X main.commit=…
// -X main.date=…; a commit ending in -dirty was built with uncommitted
// changes); a plain `go build` leaves them empty and buildInfo falls back
// to what the Go toolchain recorded in the binary. The linker can only set
// package-level strings, hence these three variables.
var (
	version string
	commit  string
	date    string
)

// build is what `signd version`, `--version` and signd_build_info report.
type build struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Module is the configured PKCS#11 module, reported only when a
	// configuration was named with --config.
	Module string `json:"pkcs11_module,omitempty"`
}

// buildInfo reads the stamped values, else the module version and the VCS
// settings (vcs.revision, vcs.time, vcs.modified) the toolchain embeds.
func buildInfo() build {
	b := build{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.time":
				if b.Date == "" {
					b.Date = s.Value
				}
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if c, dirty := strings.CutSuffix(b.Commit, "-dirty"); dirty {
		b.Commit, b.Modified = c, true
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

// String is the one-line form of --version.
func (b build) String() string {
	var s strings.Builder
	s.WriteString("signd " + b.Version)
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s.WriteString(" (commit " + c)
		if b.Modified {
			s.WriteString(", modified")
		}
		if b.Date != "" {
			s.WriteString(", " + b.Date)
		}
		s.WriteString(")")
	}
	fmt.Fprintf(&s, " %s %s", b.GoVersion, b.Platform)
	return s.String()
}

// versionCmd is `signd version`: the build, and the PKCS#11 module of the
// configuration named with --config.
func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show the version, commit, build date and Go version (and the PKCS#11 module of --config)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := buildInfo()
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
			fmt.Fprintln(a.stdout, b.String())
			if b.Module != "" {
				fmt.Fprintln(a.stdout, "pkcs11 module:", b.Module)
			}
			return nil
		},
	}
}

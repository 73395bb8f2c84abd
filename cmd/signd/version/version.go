package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by `make build` (-ldflags -X <this package>.version=…
// -X ….commit=… -X ….date=…; a commit ending in -dirty was built with
// uncommitted changes); a plain `go build` leaves them empty and Info falls back
// to what the Go toolchain recorded in the binary. The linker can only set
// package-level strings, hence these three variables.
var (
	version string
	commit  string
	date    string
)

// Build is what `signd version`, `--version` and signd_build_info report.
type Build struct {
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

// Info reads the stamped values, else the module version and the VCS
// settings (vcs.revision, vcs.time, vcs.modified) the toolchain embeds.
func Info() Build {
	b := Build{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(),
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
func (b Build) String() string {
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

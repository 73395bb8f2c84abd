package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// programs are the first words of the commands docs/OPERATIONS.md gives;
// a code span or a line of a sh block that starts with one of them (and
// has more than that word) is a command.
var programs = []string{"signd", "runuser", "dpkg", "install", "systemctl", "systemd-analyze", "make",
	"man", "promtool", "etcdctl", "kill", "go", "bin/signd-cluster", "signd-cluster"}

// opsCommands returns the commands of a markdown document: its code spans
// (a span broken over lines joined with spaces) and the lines of its sh
// code blocks, without comments, whose first word is one of programs.
func opsCommands(t *testing.T, src []byte) []string {
	t.Helper()
	var out []string
	add := func(s string) {
		if i := strings.Index(s, " #"); i >= 0 {
			s = s[:i]
		}
		f := strings.Fields(s)
		if len(f) > 1 && slices.Contains(programs, f[0]) {
			out = append(out, strings.Join(f, " "))
		}
	}
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeSpan:
			var b bytes.Buffer
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				if t, ok := c.(*ast.Text); ok {
					b.Write(t.Segment.Value(src))
					b.WriteByte(' ')
				}
			}
			add(b.String())
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock:
			if string(n.Language(src)) == "sh" {
				for i := range n.Lines().Len() {
					seg := n.Lines().At(i)
					add(string(seg.Value(src)))
				}
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// opsExercised says, for each command docs/OPERATIONS.md gives that is
// not signd's own, which test or make target runs it: each ref is
// "path/to/file_test.go:TestName" or "Makefile:target", from the
// repository's root. Where this box cannot run the command itself (PID 1
// is not systemd), the refs are what runs in its place: the unit checked
// by systemd-analyze, its ExecReload (kill -HUP) and its notify protocol
// against the daemon as a process. foreign names a command of another
// product, on the operator's own installation of it, that signd's tests
// do not run.
var opsExercised = map[string]struct {
	refs    []string
	foreign string
}{
	"make deb":                                          {refs: []string{"cmd/signd/deb_test.go:TestDebianPackage"}},
	"dpkg -i signd_*_amd64.deb":                         {refs: []string{"cmd/signd/deb_test.go:TestDebianPackage"}},
	"dpkg -i signd_<version>_amd64.deb":                 {refs: []string{"cmd/signd/deb_test.go:TestDebianPackageUpgrade"}},
	"dpkg --force-confold -i signd_<version>_amd64.deb": {refs: []string{"cmd/signd/deb_test.go:TestDebianPackageUpgrade"}},
	"dpkg -r signd":                                     {refs: []string{"cmd/signd/deb_test.go:TestDebianPackageUpgrade"}},
	"dpkg --purge signd":                                {refs: []string{"cmd/signd/deb_test.go:TestDebianPackage", "cmd/signd/deb_test.go:TestDebianPackageUpgrade"}},
	"install -m 600 -o signd -g signd /dev/stdin /etc/signd/pin": {refs: []string{"cmd/signd/deb_test.go:TestDebianPackage"}},
	"runuser -u signd -- signd config check":                     {refs: []string{"cmd/signd/deb_test.go:TestDebianPackage"}},
	"runuser -u signd -- signd user list":                        {refs: []string{"cmd/signd/adminsock_test.go:TestAdminSocketRefusesForeignUser"}},
	"man signd":                                                  {refs: []string{"cmd/signd/deb_test.go:TestDebianPackage", "cmd/signd/man_test.go:TestManPages"}},
	"man signd-config-check":                                     {refs: []string{"cmd/signd/deb_test.go:TestDebianPackage", "cmd/signd/man_test.go:TestManPages"}},
	"systemctl enable --now signd":                               {refs: []string{"cmd/signd/unit_test.go:TestSystemdUnitVerify", "cmd/signd/sdnotify_test.go:TestSystemdNotify"}},
	"systemctl restart signd":                                    {refs: []string{"cmd/signd/unit_test.go:TestSystemdUnitVerify", "cmd/signd/sdnotify_test.go:TestSystemdNotify"}},
	"systemctl reload signd":                                     {refs: []string{"cmd/signd/reload_test.go:TestReloadOnSIGHUP", "cmd/signd/reload_test.go:TestReloadRotatesCertificateUnderLoad"}},
	"systemctl edit signd":                                       {refs: []string{"cmd/signd/unit_test.go:TestSystemdUnitVerify"}},
	"systemd-analyze security":                                   {refs: []string{"cmd/signd/unit_test.go:TestSystemdUnitSecurity"}},
	"promtool test rules signd-alerts.test.yaml":                 {refs: []string{"cmd/signd/monitoring_test.go:TestAlertRulesPromtool", "cmd/signd/deb_test.go:TestDebianPackage"}},
	"make build":                                                 {refs: []string{"Makefile:build", "cmd/signd/deb_test.go:TestDebianPackage"}},
	"make test":                                                  {refs: []string{"Makefile:test"}},
	"make crashtest":                                             {refs: []string{"Makefile:crashtest", "cmd/signd/crash_test.go:TestCrashLoop"}},
	"kill -9":                                                    {refs: []string{"cmd/signd/crash_test.go:TestCrashLoop", "cmd/signd/ha_test.go:TestEtcdFailoverUnderLoad"}},
	"make demo":                                                  {refs: []string{"Makefile:demo", "cmd/signd-cluster/demo_test.go:TestDemoPorts"}},
	"make demo-ha":                                               {refs: []string{"Makefile:demo-ha", "cmd/signd-cluster/demo_test.go:TestDemoPorts"}},
	"make demo-ha DETACH=1":                                      {refs: []string{"Makefile:demo-ha"}},
	"make demo-ha-stop":                                          {refs: []string{"Makefile:demo-ha-stop"}},
	"bin/signd-cluster etcd":                                     {refs: []string{"cmd/signd-cluster/process_test.go:TestMembersAsProcesses"}},
	"bin/signd-cluster front":                                    {refs: []string{"cmd/signd-cluster/main_test.go:TestFront"}},
	"signd-cluster etcd":                                         {refs: []string{"cmd/signd-cluster/process_test.go:TestMembersAsProcesses"}},
	"go test ./cmd/signd -run 'TestEtcd'":                        {refs: []string{"Makefile:test", "cmd/signd/etcd_test.go:TestEtcdCluster"}},
	"install -m 600 -o signd -g signd BACKUP /var/lib/signd/signd.db": {refs: []string{"cmd/signd/store_cli_test.go:TestStoreBackupAndCheckCLI"}},
	"systemctl show signd -p Environment":                             {foreign: "systemd's (what a unit's environment shows every local user)"},
	"etcdctl endpoint status":                                         {foreign: "etcd's"},
	"etcdctl snapshot save":                                           {foreign: "etcd's"},
}

// TestOperationsCommands: every command docs/OPERATIONS.md gives is
// signd's and names a command of its command tree with flags it has and
// positional arguments it takes, or is in opsExercised with tests and make
// targets that exist. A command added to the page without either fails,
// and so does an entry of opsExercised the page no longer gives.
func TestOperationsCommands(t *testing.T) {
	src, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	exists := func(ref string) bool {
		file, name, _ := strings.Cut(ref, ":")
		if file == "Makefile" {
			return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:`).Match(makefile)
		}
		b, err := os.ReadFile(filepath.Join("../..", file))
		return err == nil && bytes.Contains(b, []byte("func "+name+"(t *testing.T)"))
	}
	root := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}).root()
	given := map[string]bool{}
	for _, c := range opsCommands(t, src) {
		given[c] = true
		if e, ok := opsExercised[c]; ok {
			if len(e.refs) == 0 && e.foreign == "" {
				t.Errorf("`%s`: no test named", c)
			}
			for _, r := range e.refs {
				if !exists(r) {
					t.Errorf("`%s`: %s does not exist", c, r)
				}
			}
		}
		f := strings.Fields(c)
		if i := slices.Index(f, "--"); f[0] == "runuser" && i >= 0 {
			f = f[i+1:]
		}
		if f[0] == "signd" {
			if err := inCommandTree(root, f[1:]); err != nil {
				t.Errorf("`%s`: %v", c, err)
			}
		} else if _, ok := opsExercised[c]; !ok {
			t.Errorf("docs/OPERATIONS.md gives `%s`, which no test exercises: name the test in opsExercised", c)
		}
	}
	for c := range opsExercised {
		if !given[c] {
			t.Errorf("opsExercised names `%s`, which docs/OPERATIONS.md does not give", c)
		}
	}
}

// inCommandTree checks args (a signd command line without "signd")
// against root: a command, flags it has (a flag at the end without its
// value names the flag) and, when any are given, positional arguments it
// takes (placeholders such as FILE or ID stand for them).
func inCommandTree(root *cobra.Command, args []string) error {
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root {
		return fmt.Errorf("no such command")
	}
	if cmd.HasSubCommands() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		return fmt.Errorf("%s has no command %q", cmd.CommandPath(), rest[0])
	}
	if !cmd.Runnable() {
		return fmt.Errorf("%q is a group of commands, not a command", cmd.CommandPath())
	}
	for _, a := range rest {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
			return fmt.Errorf("%s has no flag %s", cmd.CommandPath(), a)
		}
	}
	if err := cmd.ParseFlags(rest); err != nil {
		last := rest[len(rest)-1]
		if f := cmd.Flags().Lookup(strings.TrimLeft(last, "-")); f != nil && strings.HasPrefix(last, "--") && f.NoOptDefVal == "" {
			return nil
		}
		return err
	}
	if pos := cmd.Flags().Args(); len(pos) > 0 {
		return cmd.ValidateArgs(pos)
	}
	return nil
}

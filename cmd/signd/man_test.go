package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestManPages: `signd man DIR` writes a page for every command a user can
// see (hidden ones excluded), and refuses a DIR that is missing or not a
// directory.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if _, err := signdCLI(t, "man", dir); err != nil {
		t.Fatal(err)
	}
	var want []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := newApp(nil, nil, nil).root()
	root.InitDefaultCompletionCmd() // as Execute does
	walk(root)
	for _, page := range want {
		text, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil || !strings.Contains(string(text), ".SH NAME") {
			t.Errorf("%s: %v", page, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) || len(want) < 40 {
		t.Errorf("%d pages for %d commands", len(entries), len(want))
	}
	for _, hidden := range []string{"signd-config-example.1", "signd-man.1"} {
		if _, err := os.Stat(filepath.Join(dir, hidden)); err == nil {
			t.Errorf("page for a hidden command: %s", hidden)
		}
	}

	file := filepath.Join(dir, "signd.1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"man"}, "accepts 1 arg(s), received 0"},
		{[]string{"man", dir, dir}, "accepts 1 arg(s), received 2"},
		{[]string{"man", filepath.Join(dir, "none")}, "man: stat " + filepath.Join(dir, "none") + ": no such file or directory"},
		{[]string{"man", file}, "man: " + file + " is not a directory"},
	} {
		if _, err := signdCLI(t, tc.args...); err == nil || err.Error() != tc.want {
			t.Errorf("signd %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

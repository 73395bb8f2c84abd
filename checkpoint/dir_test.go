package checkpoint_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/internal/safepath/safepathtest"
)

// The checkpoint directory is written by name, by the daemon and by
// `signd audit checkpoint` as root when no daemon answers: a directory
// another local user can change is refused before anything is written,
// or that user could swap it for a link and have signd replace a file
// named checkpoint or key in any directory.
func TestWriteRefusesUnsafeDir(t *testing.T) {
	tests := []struct {
		name   string
		root   bool                                         // needs root to hand a directory to uid 65534
		setup  func(t *testing.T, base string) (dir string) // base is this uid's, 0700
		victim string                                       // "" or a directory that must stay empty
		want   string                                       // BASE stands for base
	}{
		{"world-writable parent", false, func(t *testing.T, base string) string {
			safepathtest.Mkdir(t, base+"/w", 0o777)
			return base + "/w/checkpoints"
		}, "", "directory BASE/w is writable by every local user (mode 0777, not sticky)"},
		{"other user's directory", true, func(t *testing.T, base string) string {
			safepathtest.Mkdir(t, base+"/d", 0o700)
			safepathtest.Chown(t, base+"/d", 65534, 65534)
			return base + "/d"
		}, "", "directory BASE/d is owned by uid 65534"},
		{"link to a directory of root's, in another user's", true, func(t *testing.T, base string) string {
			safepathtest.Mkdir(t, base+"/d", 0o700)
			safepathtest.Mkdir(t, base+"/etc", 0o755)
			if err := os.Symlink(base+"/etc", base+"/d/checkpoints"); err != nil {
				t.Fatal(err)
			}
			safepathtest.Chown(t, base+"/d", 65534, 65534)
			return base + "/d/checkpoints"
		}, "etc", "directory BASE/d is owned by uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("needs root to hand a directory to uid 65534 (CI runs as root)")
			}
			base := t.TempDir()
			dir := tt.setup(t, base)
			want := strings.ReplaceAll(tt.want, "BASE", base)
			_, err := checkpoint.Write(dir, 1, []byte("note\n"))
			kerr := checkpoint.WriteKey(dir, "key")
			for what, err := range map[string]error{"Write": err, "WriteKey": kerr} {
				if !errors.Is(err, checkpoint.ErrUnsafeDir) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want %v saying %q", what, err, checkpoint.ErrUnsafeDir, want)
				}
			}
			if tt.victim != "" {
				if ents, _ := os.ReadDir(filepath.Join(base, tt.victim)); len(ents) != 0 {
					t.Errorf("written through the link: %v", ents)
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, checkpoint.LatestName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v, want nothing written", checkpoint.LatestName, err)
			}
		})
	}
}

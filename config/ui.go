package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/signd/signd/config/rules"
	"github.com/signd/signd/internal/safepath"
)

// UIConfig is the ui.* section: how the login, consent, account and error
// pages look (oauth/pages). Everything is read once, at start.
type UIConfig struct {
	// TemplatesDir holds templates that replace built-in ones by file
	// name (pages.html, account.html, enroll.html); "" = the built-in ones.
	TemplatesDir string `mapstructure:"templates_dir"`
	// ProductName replaces "signd" in the pages' titles and footer; "" =
	// signd.
	ProductName string `mapstructure:"product_name"`
	// LogoFile is a PNG, JPEG or SVG shown at the top of every page.
	LogoFile string `mapstructure:"logo_file"`
	// PrimaryColor is the buttons' colour, #rrggbb.
	PrimaryColor string `mapstructure:"primary_color"`
}

// Bounds of the ui.* keys.
const (
	// MaxLogoBytes caps ui.logo_file: the logo is held in memory and sent
	// with every page view.
	MaxLogoBytes = 256 << 10
	// MaxProductNameLen caps ui.product_name, in characters.
	MaxProductNameLen = 64
)

// LogoExtensions are the file name endings ui.logo_file may have.
var LogoExtensions = []string{".png", ".jpg", ".jpeg", ".svg"}

func uiKeys() []Key {
	return []Key{
		{Name: "ui.templates_dir", Default: "",
			Usage: "directory of templates replacing built-in ones by file name (pages.html, account.html, enroll.html); empty = built-in",
			Doc:   "directory whose `pages.html`, `account.html` and `enroll.html`, when present, replace the built-in page templates (a missing one stays built-in); parsed at start, a template error stops signd naming the file and line. It, its files and every directory above it must be owned by root or signd's user and not writable by group or others (a sticky directory like /tmp may be). See [Branding the pages](OPERATIONS.md#branding-the-pages)"},
		{Name: "ui.product_name", Default: "",
			Usage: "product name in the pages' titles and footer; empty = signd",
			Doc:   "the name in the pages' titles and footer instead of signd: at most 64 printable characters; empty = signd"},
		{Name: "ui.logo_file", Default: "",
			Usage: "PNG, JPEG or SVG logo shown on every page (at most 256 KiB); empty = none",
			Doc:   "PNG, JPEG or SVG logo at the top of every page, at most 256 KiB, read at start and served by signd at `/ui/logo-<hash>.<ext>` (an SVG with a CSP that forbids script and sandboxes it); empty = none"},
		{Name: "ui.primary_color", Default: "",
			Usage: "colour of the buttons and links, #rrggbb, with a contrast of at least 4.5:1 with white; empty = the built-in blue",
			Doc:   "colour of the buttons and links as `#rrggbb` (quote it in YAML: `\"#005a9c\"`), dark enough for white text: a contrast of at least 4.5:1 with white (WCAG 2.2 §1.4.3); empty = the built-in blue"},
	}
}

func (u *UIConfig) checks() []check {
	return []check{
		{"ui.templates_dir", trustedDir(u.TemplatesDir, os.Geteuid())},
		{"ui.product_name", rules.PrintableText(u.ProductName, MaxProductNameLen)},
		{"ui.logo_file", logoFile(u.LogoFile)},
		{"ui.primary_color", rules.Colour(u.PrimaryColor, MinContrast)},
	}
}

// MinContrast is the least contrast ui.primary_color must have with white
// (WCAG 2.2 §1.4.3, text of normal size).
const MinContrast = 4.5

func logoFile(p string) string {
	if msg := rules.ReadableFile(p); msg != "" || p == "" {
		return msg
	}
	ext := strings.ToLower(filepath.Ext(p))
	ok := false
	for _, e := range LogoExtensions {
		ok = ok || ext == e
	}
	if !ok {
		return fmt.Sprintf("%s is not a .png, .jpg, .jpeg or .svg file", p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return rules.FileError(p, err)
	}
	if fi.Size() > MaxLogoBytes {
		return fmt.Sprintf("%s has %d bytes, more than %d (256 KiB)", p, fi.Size(), MaxLogoBytes)
	}
	if fi.Size() == 0 {
		return fmt.Sprintf("%s is empty", p)
	}
	return ""
}

// trustedDir checks ui.templates_dir: a readable directory that only root
// or euid can change, whose files are owned by root or euid and not
// writable by group or others. A template is code the daemon runs on every
// page: whoever may write one may put a form that posts the password
// elsewhere in front of every user.
func trustedDir(dir string, euid int) string {
	if dir == "" {
		return ""
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return rules.FileError(dir, err)
	}
	if !fi.IsDir() {
		return fmt.Sprintf("%s is not a directory", dir)
	}
	if msg := trusted(dir, fi, euid); msg != "" {
		return msg
	}
	// And the directories above it: whoever may write one could put
	// another directory in its place between this check and the parse.
	if err := uiPolicy(euid).Parents(filepath.Dir(dir)); err != nil {
		return err.Error()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return rules.FileError(dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			return rules.FileError(p, err)
		}
		if msg := trusted(p, fi, euid); msg != "" {
			return msg
		}
	}
	return ""
}

// uiPolicy is who may change the templates: root and the user running
// signd.
func uiPolicy(euid int) safepath.Policy {
	return safepath.Policy{EUID: euid, Harm: "could change the pages"}
}

func trusted(p string, fi os.FileInfo, euid int) string {
	if err := uiPolicy(euid).Entry("", p, fi, ""); err != nil {
		return err.Error()
	}
	return ""
}

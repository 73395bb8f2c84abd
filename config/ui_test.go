package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUIKeys checks the ui.* keys: every bad value is one problem on its
// key with a message that says what to fix.
func TestUIKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", size)), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	logo := write("logo.png", 1000, 0o644)
	svg := write("logo.svg", 1000, 0o644)
	big := write("big.png", MaxLogoBytes+1, 0o644)
	empty := write("empty.png", 0, 0o644)
	gif := write("logo.gif", 10, 0o644)
	noRead := write("secret.png", 10, 0o000)
	asDir := filepath.Join(dir, "dir.png")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(dir, "templates")
	if err := os.Mkdir(tmpl, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmpl, "pages.html"), []byte(`{{define "x"}}{{end}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	openDir := filepath.Join(dir, "open")
	if err := os.Mkdir(openDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(openDir, 0o777); err != nil {
		t.Fatal(err)
	}
	openFileDir := filepath.Join(dir, "openfile")
	if err := os.Mkdir(openFileDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(openFileDir, "pages.html"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(openFileDir, "pages.html"), 0o666); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "unreadable")
	if err := os.Mkdir(unreadable, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(unreadable, 0o300); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0

	tests := []struct {
		name      string
		mutate    func(*UIConfig)
		key, msg  string
		skipAsRoo bool // root reads files whatever their mode
	}{
		{"all empty", func(*UIConfig) {}, "", "", false},
		{"all set", func(u *UIConfig) {
			*u = UIConfig{TemplatesDir: tmpl, ProductName: "Acme Sign", LogoFile: logo, PrimaryColor: "#005A9c"}
		}, "", "", false},
		{"svg logo", func(u *UIConfig) { u.LogoFile = svg }, "", "", false},
		{"logo missing", func(u *UIConfig) { u.LogoFile = filepath.Join(dir, "nope.png") }, "ui.logo_file", "nope.png: no such file or directory", false},
		{"logo is a directory", func(u *UIConfig) { u.LogoFile = asDir }, "ui.logo_file", "dir.png is not a regular file", false},
		{"logo oversized", func(u *UIConfig) { u.LogoFile = big }, "ui.logo_file", "has 262145 bytes, more than 262144 (256 KiB)", false},
		{"logo empty", func(u *UIConfig) { u.LogoFile = empty }, "ui.logo_file", "empty.png is empty", false},
		{"logo wrong type", func(u *UIConfig) { u.LogoFile = gif }, "ui.logo_file", "logo.gif is not a .png, .jpg, .jpeg or .svg file", false},
		{"logo unreadable", func(u *UIConfig) { u.LogoFile = noRead }, "ui.logo_file", "secret.png: permission denied", true},
		{"colour without #", func(u *UIConfig) { u.PrimaryColor = "005a9c" }, "ui.primary_color", `"005a9c" is not a colour #rrggbb`, false},
		{"colour short", func(u *UIConfig) { u.PrimaryColor = "#fff" }, "ui.primary_color", `"#fff" is not a colour #rrggbb`, false},
		{"colour name", func(u *UIConfig) { u.PrimaryColor = "red" }, "ui.primary_color", `"red" is not a colour`, false},
		{"colour CSS injection", func(u *UIConfig) { u.PrimaryColor = "#000000;}body{display:none" }, "ui.primary_color", `is not a colour #rrggbb`, false},
		{"colour not hex", func(u *UIConfig) { u.PrimaryColor = "#gg0000" }, "ui.primary_color", `"#gg0000" is not a colour`, false},
		{"colour white", func(u *UIConfig) { u.PrimaryColor = "#ffffff" }, "ui.primary_color", "#ffffff has a contrast of 1.00:1 with white, below the 4.5:1", false},
		{"colour gold", func(u *UIConfig) { u.PrimaryColor = "#FFD700" }, "ui.primary_color", "#FFD700 has a contrast of 1.40:1 with white", false},
		{"colour just too light", func(u *UIConfig) { u.PrimaryColor = "#777777" }, "ui.primary_color", "#777777 has a contrast of 4.48:1 with white, below the 4.5:1", false},
		{"colour just dark enough", func(u *UIConfig) { u.PrimaryColor = "#767676" }, "", "", false},
		{"colour black", func(u *UIConfig) { u.PrimaryColor = "#000000" }, "", "", false},
		{"colour built-in blue", func(u *UIConfig) { u.PrimaryColor = "#1d4ed8" }, "", "", false},
		{"product name too long", func(u *UIConfig) { u.ProductName = strings.Repeat("n", 65) }, "ui.product_name", "is longer than 64 characters", false},
		{"product name 64 characters", func(u *UIConfig) { u.ProductName = strings.Repeat("é", 64) }, "", "", false},
		{"product name control character", func(u *UIConfig) { u.ProductName = "Acme\x1b[31m" }, "ui.product_name", "has a character that is not printable (U+001B)", false},
		{"product name newline", func(u *UIConfig) { u.ProductName = "Acme\nSign" }, "ui.product_name", "not printable (U+000A)", false},
		{"product name padded", func(u *UIConfig) { u.ProductName = " Acme" }, "ui.product_name", "begins or ends with white space", false},
		{"product name not UTF-8", func(u *UIConfig) { u.ProductName = "Acme\xff" }, "ui.product_name", "is not UTF-8", false},
		{"templates dir missing", func(u *UIConfig) { u.TemplatesDir = filepath.Join(dir, "none") }, "ui.templates_dir", "none: no such file or directory", false},
		{"templates dir is a file", func(u *UIConfig) { u.TemplatesDir = logo }, "ui.templates_dir", "logo.png is not a directory", false},
		{"templates dir writable by others", func(u *UIConfig) { u.TemplatesDir = openDir }, "ui.templates_dir", "open is writable by group or others (mode 0777)", false},
		{"template writable by others", func(u *UIConfig) { u.TemplatesDir = openFileDir }, "ui.templates_dir", "pages.html is writable by group or others (mode 0666)", false},
		{"templates dir unreadable", func(u *UIConfig) { u.TemplatesDir = unreadable }, "ui.templates_dir", "unreadable: permission denied", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skipAsRoo && root {
				t.Skip("root reads files whatever their mode")
			}
			wantOneProblem(t, validated(t, func(c *Config) { tt.mutate(&c.UI) }), tt.key, tt.msg)
		})
	}
}

// TestUITemplatesDirOwner refuses a templates directory, or a template in
// it, that a user other than root or the daemon's owns.
func TestUITemplatesDirOwner(t *testing.T) {
	for _, name := range []string{"", "pages.html"} {
		dir := t.TempDir()
		p := filepath.Join(dir, name)
		if name != "" {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		euid := os.Geteuid()
		if euid == 0 {
			if err := os.Chown(p, 12345, -1); err != nil {
				t.Fatal(err)
			}
		} else {
			euid++ // the files are ours, not root's and not euid's
		}
		msg := trustedDir(dir, euid)
		if !strings.Contains(msg, filepath.Clean(p)+" is owned by uid") || !strings.Contains(msg, "not by root or uid") {
			t.Errorf("trustedDir with %s owned by another user = %q", p, msg)
		}
	}
}

// TestUITemplatesDirParents refuses a templates directory of root's inside
// a directory another user owns: that user could swap it for theirs
// between the check and the parse.
func TestUITemplatesDirParents(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to hand a directory to another uid")
	}
	theirs := filepath.Join(t.TempDir(), "theirs")
	tmpl := filepath.Join(theirs, "templates")
	if err := os.MkdirAll(tmpl, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	msg := trustedDir(tmpl, 0)
	if !strings.Contains(msg, theirs+" is owned by uid 65534") {
		t.Errorf("trustedDir(%s) under a directory of uid 65534 = %q", tmpl, msg)
	}
}

// TestUIBadTypes: a ui.* value of the wrong YAML type is its key's
// problem; an unquoted #rrggbb is a YAML comment, so the key is empty.
func TestUIBadTypes(t *testing.T) {
	isolate(t)
	_, _, err := loadYAML(t, "server:\n  base_url: https://x.org\npkcs11:\n  pin: \"1\"\nui:\n  product_name: [Acme, Sign]\n  primary_color: 0xc01060\n  logo_file: {path: x}\n  templates_dir: 7\n")
	msg := err.Error()
	for _, want := range []string{
		"ui.product_name: must be a string, not a list",
		"ui.primary_color: must be a string, not a number",
		"ui.logo_file: must be a single value, not a mapping",
		"ui.templates_dir: must be a string, not a number",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	_, c, err := loadYAML(t, "server:\n  base_url: https://x.org\npkcs11:\n  pin: \"1\"\nui:\n  primary_color: #c01060\n")
	if err != nil || c.UI.PrimaryColor != "" {
		t.Errorf("unquoted colour: %q, %v", c.UI.PrimaryColor, err)
	}
}

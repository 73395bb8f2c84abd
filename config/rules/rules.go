package rules

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// NonEmpty refuses the empty string.
func NonEmpty(s string) string {
	if s == "" {
		return "must not be empty"
	}
	return ""
}

// Positive refuses a duration that is zero or negative.
func Positive(d time.Duration) string {
	if d <= 0 {
		return fmt.Sprintf("must be a positive duration, got %s", d)
	}
	return ""
}

// AtMost refuses a duration that is not positive or is over maxD; the
// message names the bound as bound (a key's name and value, or maxD).
func AtMost(d, maxD time.Duration, bound string) string {
	if msg := Positive(d); msg != "" {
		return msg
	}
	if d > maxD {
		return fmt.Sprintf("at most %s, got %s", bound, d)
	}
	return ""
}

// Between refuses n outside lo..hi.
func Between[T int | int64](n, lo, hi T) string {
	if n < lo || n > hi {
		return fmt.Sprintf("must be between %d and %d, got %d", lo, hi, n)
	}
	return ""
}

// OneOf refuses s unless it is one of allowed.
func OneOf(s string, allowed ...string) string {
	if !slices.Contains(allowed, s) {
		return fmt.Sprintf("%q is not one of %s", s, strings.Join(allowed, ", "))
	}
	return ""
}

// Absolute refuses a relative path.
func Absolute(p string) string {
	if !filepath.IsAbs(p) {
		return fmt.Sprintf("%q is not an absolute path", p)
	}
	return ""
}

// HostPort refuses what is not host:port with a numeric port.
func HostPort(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("%q is not host:port", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Sprintf("%q is not host:port (port must be a number 0-65535)", s)
	}
	return ""
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PairedWith reports when this half of a pair is empty but the other is set.
func PairedWith(this, other, otherKey string) string {
	if this == "" && other != "" {
		return "required when " + otherKey + " is set"
	}
	return ""
}

// ReadableFile checks that a configured file (if any) is a regular file we
// can open.
func ReadableFile(p string) string {
	if p == "" {
		return ""
	}
	fi, err := os.Stat(p)
	if err != nil {
		return FileError(p, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Sprintf("%s is not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return FileError(p, err)
	}
	_ = f.Close()
	return ""
}

// FileError words an os error as "<path>: <reason>", without the "stat" or
// "open" operation name.
func FileError(p string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("%s: %v", p, err)
}

// PrivateFile is ReadableFile for files holding secrets: no permission bits
// for group or others.
func PrivateFile(p string) string {
	if msg := ReadableFile(p); msg != "" || p == "" {
		return msg
	}
	fi, err := os.Stat(p)
	if err != nil {
		return FileError(p, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Sprintf("%s has mode %#o; it must not be readable or writable by group or others (chmod 600)", p, perm)
	}
	return ""
}

// RequiredWith refuses an empty v when the feature named by key is on.
func RequiredWith(v string, on bool, key string) string {
	if v == "" && on {
		return "required when " + key + " is set"
	}
	return ""
}

// PrintableText refuses text that is not UTF-8, longer than max
// characters, begins or ends with white space or holds a character that
// is not printable; "" passes (the default).
func PrintableText(s string, max int) string {
	switch {
	case s == "":
		return ""
	case !utf8.ValidString(s):
		return "is not UTF-8"
	case utf8.RuneCountInString(s) > max:
		return fmt.Sprintf("is longer than %d characters", max)
	case strings.TrimSpace(s) != s:
		return fmt.Sprintf("%.70q begins or ends with white space", s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("%.70q has a character that is not printable (%U)", s, r)
		}
	}
	return ""
}

var colourRE = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// Colour refuses what is not a colour #rrggbb with a contrast of at least
// minContrast with white (WCAG 2.2 §1.4.3: white text on it, and it as
// text on white); "" passes (the default).
func Colour(s string, minContrast float64) string {
	if s == "" {
		return ""
	}
	if !colourRE.MatchString(s) {
		return fmt.Sprintf("%.20q is not a colour #rrggbb (six hex digits, e.g. #005a9c)", s)
	}
	if c := ContrastWithWhite(s); c < minContrast {
		return fmt.Sprintf("%s has a contrast of %.2f:1 with white, below the %.1f:1 that WCAG 2.2 asks for the buttons' white text and the links; choose a darker colour", s, c, minContrast)
	}
	return ""
}

// ContrastWithWhite is the WCAG 2.2 contrast ratio of #rrggbb with white:
// (1 + 0.05) / (L + 0.05), L the colour's relative luminance.
func ContrastWithWhite(s string) float64 {
	var rgb [3]float64
	for i := range rgb {
		v, _ := strconv.ParseUint(s[1+2*i:3+2*i], 16, 8)
		c := float64(v) / 255
		if c <= 0.04045 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		rgb[i] = c
	}
	l := 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
	return 1.05 / (l + 0.05)
}

package config

import (
	"github.com/signd/signd/config/schema"
)

//go:generate go run ./internal/gendoc ../docs/CONFIG.md

// The key table's machinery is package schema's; Keys is the one table,
// and these are its names here.
type (
	// Key describes one configuration key; Keys returns the full table.
	Key = schema.Key
	// Secret is a string that redacts itself everywhere but Reveal.
	Secret = schema.Secret
	// Problem is one bad key.
	Problem = schema.Problem
	// Error is returned by Load and Validate: every bad key, one per line.
	Error = schema.Error
	// Setting is one key and its effective value, see Config.Settings.
	Setting = schema.Setting
)

const (
	// EnvPrefix is prepended to a key's name to form its environment
	// variable: server.base_url is read from SIGND_SERVER_BASE_URL.
	EnvPrefix = schema.EnvPrefix
	// MaxFileBytes bounds the configuration file.
	MaxFileBytes = schema.MaxFileBytes
	// ReferenceBegin and ReferenceEnd mark the key table in
	// docs/CONFIG.md; SpliceReference rewrites what is between them.
	ReferenceBegin = schema.ReferenceBegin
	ReferenceEnd   = schema.ReferenceEnd
)

// EnvName returns the environment variable for a dotted key name.
func EnvName(name string) string { return schema.EnvName(name) }

// Reference returns the key table of docs/CONFIG.md as markdown, one row
// per key of Keys (schema.Reference).
func Reference() ([]byte, error) { return schema.Reference(Keys()) }

// SpliceReference returns doc with the text between ReferenceBegin and
// ReferenceEnd replaced by Reference (schema.SpliceReference).
func SpliceReference(doc []byte) ([]byte, error) { return schema.SpliceReference(doc, Keys()) }

// Example returns a configuration file that names every key of Keys,
// commented out with its default, the keys of set written with the given
// value (schema.Example). `signd config example` prints it; the package
// ships it as /etc/signd/signd.yaml.
func Example(set map[string]string) ([]byte, error) { return schema.Example(Keys(), set) }

// Settings returns every key with its effective value, in the order of
// Keys, e.g. for `signd config show`.
func (c *Config) Settings() []Setting { return schema.Settings(c) }

// Changed returns the keys whose effective values differ between c and
// next, in the order of Keys, compared as loaded (schema.Changed): a
// SIGHUP reload refuses a configuration that changes a key without
// Reload.
func (c *Config) Changed(next *Config) []Key { return schema.Changed(Keys(), c, next) }

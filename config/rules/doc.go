// Package rules holds the checks of single configuration values that
// several sections share: each returns "" when the value is fine, else the
// problem in words ("must not be empty", "%q is not host:port"), which
// package config reports under the key's name. What a rule knows of signd
// (a token label, a socket path, the issuer URL) stays in config.
package rules

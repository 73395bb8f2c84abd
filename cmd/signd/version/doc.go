// Package version says which build of signd runs: the version, commit and
// date `make build` stamps into the binary with the linker's -X flag (the
// only package-level variables of cmd/signd, since the linker can set
// nothing else), or else what the Go toolchain recorded (Info). `signd
// version`, `--version`, the man page's header and signd_build_info read
// it.
package version

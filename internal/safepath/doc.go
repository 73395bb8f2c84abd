// Package safepath decides whether a path can be changed only by root and
// the user signd runs as: the admin socket's directory (a socket there
// receives passwords and PINs), the configuration file, the PKCS#11 module
// (code signd loads into itself), the page templates, and the directories
// signd creates and opens its data in by name (the store file, the audit
// checkpoints: DataDir), where another user's link would turn root's open
// or rename into one of a file of their choosing. The path must be owned by
// root or that user and not writable by group or others (others only, for
// DataDir), and so must every directory above it, up to /, as written and
// with links resolved, except that a sticky ancestor (like /tmp) may be
// writable, since nobody can rename or remove what is not theirs there.
// Its errors name the path and the chown or chmod to run.
package safepath

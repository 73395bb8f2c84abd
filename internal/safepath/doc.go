// Package safepath decides whether a path can be changed only by root and
// the user signd runs as: the admin socket's directory (a socket there
// receives passwords and PINs), the configuration file, the PKCS#11 module
// (code signd loads into itself) and the page templates. The path must be
// owned by root or that user and not writable by group or others, and so
// must every directory above it, up to /, except that a sticky ancestor
// (like /tmp) may be writable, since nobody can rename or remove what is not
// theirs there. Its errors name the path and the chown or chmod to run.
package safepath

// Package safedir judges whether a directory is one that only root and
// this process's user can change: a directory that signd, possibly
// running as root, creates or opens files in by name (the store file,
// the audit checkpoints). Another local user who owns a directory on the
// way, or can write one that is not sticky, could put a link there and
// turn signd's open or rename into one of a file of theirs choosing:
// a dangling link at the store path made `signd user list` as root create
// /etc/nologin. O_NOFOLLOW guards the last name only; this guards the
// directories.
package safedir

// Package checkpointtest damages the audit log of a closed bbolt store
// file as an intruder holding the file would, for the tests of audit
// checkpoints: Truncate cuts its end off, Rewrite changes an entry and
// computes the chain after it again (which a plain chain check accepts).
package checkpointtest

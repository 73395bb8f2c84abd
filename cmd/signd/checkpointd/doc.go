// Package checkpointd is the daemon's part of signed audit checkpoints
// (package checkpoint): Handler serves the latest checkpoint and the
// verifier key to witnesses from audit.checkpoint_dir, without asking the
// token anything, and Every signs one every audit.checkpoint_interval.
package checkpointd

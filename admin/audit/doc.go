// Package audit is the administration of the audit log: verifying its
// hash chains (one per node of a cluster whose nodes are named) and
// exporting its entries (audit.go), and the audit key and the signed
// checkpoints of the log (checkpoint.go; the checkpoint format and Maker
// are package checkpoint's, what is asked of the token admin/tokenkeys's).
// Each operation is one audited act (admin/act); admin.Local calls it
// through Audit. The verifications write nothing into a log they found
// broken: that act is in the log line only.
package audit

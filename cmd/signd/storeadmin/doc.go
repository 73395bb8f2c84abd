// Package storeadmin is `signd store check` and `signd store backup` on a
// bbolt store, both sides: Handler serves StoreCheck and StoreBackup on
// the daemon's admin socket (a check to any role, a backup to the security
// officer, streamed and recorded in the audit log as store_backup); File
// and Socket are where the command runs them, on the file no daemon holds
// or through the running daemon. A backup that cannot be recorded is not
// kept.
package storeadmin

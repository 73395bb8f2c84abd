// Package daemonaudit writes the daemon's own acts into the audit log
// (Actor "signd", admin.Daemon): the configuration it runs with
// (config_loaded, at start and on each SIGHUP reload: ConfigLoaded,
// ConfigRefused) and the OIDC signing keys it creates, promotes or purges
// by itself at start (oidc_key_created, oidc_keys_rotated: OIDCKeys).
// Append writes entries in one transaction. The store backup
// (store_backup) names the operator who asked and is written where the
// backup is made.
package daemonaudit

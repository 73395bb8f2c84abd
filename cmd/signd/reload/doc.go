// Package reload is what SIGHUP does to a running signd serve without
// dropping a connection (Reloader): it loads the configuration again and
// puts in force the keys the key table marks Reload (config.Key): the TLS
// certificates and keys, log.level, the certificate-status settings
// (fetching every credential's OCSP and CRL answers again when one of
// them changed) and the provisioning API's CRL; it tells systemd
// RELOADING=1 and READY=1 around it, and records the outcome in the audit
// log. Every other key is read at start only: a reload that changes one
// (who may administer signd, a limit, the store, turning
// csc.cert_status or the provisioning API on or off), that turns TLS on
// or off, or that would weaken the provisioning API's CRL check is
// refused naming why, and changes nothing, so that an accepted reload's
// config_loaded entry records a configuration wholly in force.
package reload

// Package reload is what SIGHUP does to a running signd serve without
// dropping a connection (Reloader): it loads the configuration again and
// applies the TLS certificates and keys, log.level, the
// certificate-status settings (fetching every credential's OCSP and CRL
// answers again) and the provisioning API's CRL, tells systemd
// RELOADING=1 and READY=1 around it, and records the outcome in the audit
// log. Other keys need a restart; a reload that changes a key deciding
// who may administer signd (RestartOnly), or that would weaken the
// provisioning API's CRL check, is refused and changes nothing.
package reload

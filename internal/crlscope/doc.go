// Package crlscope decides whether a CRL is a complete CRL and whether
// its scope includes a certificate (RFC 5280 §5.2.4, §5.2.5, §6.3.3): a
// delta CRL, a partition for some reasons, an indirect CRL, one for
// attribute certificates or with an unknown critical extension is no
// answer on its own. The signing path (csc/certstatus) and the
// provisioning API's client CRL (config/clientca) share it, so both
// refuse the same CRLs. It also owns the clock skew tolerated on a
// thisUpdate (Skew, Future), which both and certstatus's OCSP answers use.
package crlscope

// Package certstatus finds out whether the certificates of signing
// credentials are revoked or suspended, from the OCSP responders
// (authority information access, RFC 6960) and CRL distribution points
// (RFC 5280 §4.2.1.13, §5) the certificates name.
//
// A Checker keeps the last good answer per chain in memory; Refresh
// (called by Run on an interval, and at once after Reconfigure changed
// the interval, time limit or OCSP max age) fetches fresh answers, and
// Status, on the signing path, only reads the cache. Every certificate of
// a chain but the last is checked against the next one (its issuer; the last is
// where the chain ends, a root or an intermediate under a root the relying
// party holds; a leaf alone that names a source cannot be verified and is
// never current): OCSP first,
// then the CRL when no responder gave a usable answer. Every answer is
// verified against the issuer (an OCSP response signed by the issuer or by
// a responder certificate the issuer signed for id-kp-OCSPSigning; a CRL
// signed by the issuer, naming it), and must be current (thisUpdate not in
// the future, nextUpdate not passed; an OCSP response without nextUpdate
// only for Config.OCSPMaxAge after its thisUpdate). A CRL counts only when
// it is a complete CRL for the certificate (internal/crlscope: its
// issuingDistributionPoint scope, no delta CRL, no critical extension
// that is not processed). Per certificate, answers only move forward
// (history.go): an older answer than the last taken is refused, a
// revocation is final, and only a newer answer lifts a hold.
//
// Refresh checks fetchWorkers chains at once and publishes each chain's
// answer as soon as it is decided. Within one refresh each CRL is fetched
// once, each certificate is checked once against its issuer, and a host that did not answer (timed out, refused or reset the
// connection) is not asked again: the certificates naming it go to their
// next source at once. Fetches never follow a redirect, and the client
// New makes never connects to a loopback, link-local, unspecified or
// multicast address (Config.AllowLoopback lets tests reach loopback). An
// OCSP response must be about the certificate's issuer: its CertID's
// issuer hashes are the request's (certid.go), not only its serial number.
//
// Failure policy (hard fail): a fetch that fails keeps the last good answer
// until its nextUpdate (an OCSP response without nextUpdate is good for
// two refresh intervals, and at most OCSPMaxAge after its thisUpdate; a
// CRL without one is refused; Run fetches again before an answer ends).
// From then on, and for a chain never answered at all, Status reports the
// answer as not current and the signing service refuses to sign with it.
// A chain whose certificates name no responder and no distribution point
// has nothing to check and is always current.
package certstatus

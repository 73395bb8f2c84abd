// Package ops is what signd's administrative operations are, as their
// transports see them: the Service interface that package admin's Local
// implements (and the admin socket's client too), the request, view and
// result types each operation takes and answers, the one Operations table
// declaring the trusted roles that may perform each (ETSI EN 319 401
// §7.4) and decoding its JSON request strictly, and the operator-facing
// Error with the Kind that crosses the admin socket.
//
// It performs nothing: the acts, their audit entries, dual control and the
// checks that need the store or the HSM are package admin's, which
// re-exports these names. It imports nothing of admin.
package ops

// Package module is the process-wide side of PKCS#11 for package hsm:
// the loaded modules, one per resolved path and reference counted (Open,
// Release), their initialization and re-initialization during recovery
// (Reinit, ordered against every Token's calls by Module.Mu and counted
// by Module.Epoch), the registry of the sessions a module handed out
// (Session: a number with the serial of the C_OpenSession that returned
// it, because opencryptoki and tpm2-pkcs11 give a closed session's number
// to the next one), and Pool, the bounded set of sessions operations
// borrow.
//
// C_Initialize and C_Finalize act on the whole process, so two Tokens on
// one module must share one initialization: the registry of modules is
// the one piece of package-level state of package hsm and its parts.
// Modules are never unloaded (no dlclose). Logging in, recovery and
// what a Token does with its sessions are package hsm's.
package module

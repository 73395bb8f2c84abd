// Package cliinput reads what the admin CLI takes from files: passwords,
// PINs and secrets (ReadSecret: bounded, one trailing newline trimmed,
// never echoed), other files with a size limit (ReadFile; "-" is stdin,
// and OneStdin refuses two flags that both read it) and the identity
// claims of `signd user add --claims` (ParseClaims).
package cliinput

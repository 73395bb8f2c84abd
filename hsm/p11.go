package hsm

import (
	"github.com/signd/signd/hsm/caps"
	"github.com/signd/signd/hsm/cryptoki"
)

// Ctx is the subset of *pkcs11.Ctx this package calls, defined once in
// package cryptoki (the fault injector hsmtest wraps the same type).
// Keeping it narrow lets fault-injection tests wrap the real module with
// one that fails chosen calls (Config.Wrap, package hsmtest; compare
// letsencrypt/boulder pkcs11helpers.PKCtx).
type Ctx = cryptoki.Ctx

// p11 is the package's name for Ctx.
type p11 = Ctx

// Capabilities is what the token said of itself at Open (package caps).
type Capabilities = caps.Capabilities

// Mechanism is one mechanism signd uses, as the token describes it.
type Mechanism = caps.Mechanism

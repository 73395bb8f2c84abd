// Package hsmtest injects PKCS#11 faults into an hsm.Token, for tests.
//
// Faults wraps the real module (SoftHSM2 in every test) in the style of
// letsencrypt/boulder's pkcs11helpers MockCtx: before each PKCS#11 call it
// may fail the call with any return value (CKR_*), add latency, or behave
// as if the token were gone (removed, powered off), and it counts calls.
// With ReuseSessionNumbers it numbers sessions as opencryptoki and
// tpm2-pkcs11 do, handing the number of a closed session to the next one.
// Everything it does not inject is the real module's behaviour. Hand it to
// a Token through hsm.Config.Wrap:
//
//	var f *hsmtest.Faults
//	tok, err := hsm.Open(hsm.Config{...,
//		Wrap: func(c hsm.Ctx) hsm.Ctx { f = hsmtest.Wrap(c); return f }})
//	f.FailOnce("Sign", pkcs11.CKR_DEVICE_ERROR)
//
// The package imports nothing of signd but hsm/cryptoki, the one
// definition of the interface it wraps (hsm.Ctx names the same type), so
// the hsm package's own tests use it too. Its sub-package softtoken replaces the token altogether for the
// protocol packages' unit tests: a software token with the same errors and
// faults injected by operation.
package hsmtest

// Package keyobj is what package hsm asks of a key pair's PKCS#11 objects
// and how it reads what the token made of them. It holds no state and
// opens no session: every function works on the session it is given.
//
//   - Templates (RSAPublicTemplate, ECPublicTemplate, EdwardsPublicTemplate,
//     PrivateTemplate): the private key sensitive, never extractable, can
//     only sign, frozen (CKA_MODIFIABLE false, CKA_COPYABLE false); Options
//     takes out what the token does not know (CKA_COPYABLE before Cryptoki
//     2.40) or fixes itself (CKA_ENCRYPT, CKA_DECRYPT under the
//     token-fixed-usage profile). TemplateRefusal and Refusal name the
//     return values with which a token refuses a template or a request.
//   - Reading (Objects.Find, Attrs, ReadKeyAttrs, ReadPublic): attributes
//     in one C_GetAttributeValue, one at a time when the token refuses
//     one of them as unknown or sensitive; the public half of RSA, EC
//     (P-256, P-384, P-521) and Ed25519 keys; CheckPolicy, the key policy
//     a key must meet to sign.
//   - The freeze test (Objects.FreezeDefects), described below.
//
// The freeze is tested, not read back: after generation package hsm
// writes the key's own CKA_LABEL back with C_SetAttributeValue, which a
// frozen key refuses (tpm2-pkcs11 accepts it although CKA_MODIFIABLE
// reads false), tries a C_CopyObject into a session object, which it must
// refuse as well (opencryptoki 3.8 does not know CKA_COPYABLE and copies
// any key; the copy is destroyed at once), and reads the usages the
// token really gave it
// (CKA_DECRYPT, CKA_UNWRAP, CKA_DERIVE, CKA_SIGN_RECOVER). Only an
// explicit refusal proves the freeze (CKR_ACTION_PROHIBITED,
// CKR_ATTRIBUTE_READ_ONLY, CKR_TEMPLATE_INCONSISTENT,
// CKR_TOKEN_WRITE_PROTECTED, CKR_FUNCTION_NOT_SUPPORTED; FreezeRefusal): another answer is the defect "freeze could not be
// tested", and an ambiguous one fails the operation. The copy gets a
// CKA_ID and CKA_LABEL of its own, key finds wait while it is made (a
// token may apply the copy's template after copying the key: SoftHSM2
// does) and match token objects only, and a copy that cannot be
// destroyed closes its session. A key that reads CKA_MODIFIABLE or
// CKA_COPYABLE true is neither written nor copied: the token says so
// itself.
//
// Which session, which token, the retries and the key-handle cache are
// package hsm's (keys.go, run.go).
package keyobj

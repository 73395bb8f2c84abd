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
//   - The freeze test (Objects.FreezeDefects): a same-value
//     C_SetAttributeValue of CKA_LABEL and a C_CopyObject into a session
//     object, both of which a frozen key refuses, and the usages the
//     token really gave the key. Only an explicit refusal proves the
//     freeze (FreezeRefusal); another answer is the defect "freeze could
//     not be tested". The copy has a CKA_ID and CKA_LABEL of its own and
//     is destroyed at once; finds wait while it is made (Objects.CopyMu).
//
// Which session, which token, the retries and the key-handle cache are
// package hsm's (keys.go, run.go).
package keyobj

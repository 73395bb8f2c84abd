// Package caps is what a PKCS#11 module and token say they are and can
// do, asked once when package hsm opens the token (Probe: C_GetInfo,
// C_GetTokenInfo, C_GetMechanismList and C_GetMechanismInfo for the
// mechanisms signd uses: CKM_RSA_PKCS_KEY_PAIR_GEN, CKM_RSA_PKCS,
// CKM_RSA_PKCS_PSS, CKM_EC_KEY_PAIR_GEN, CKM_ECDSA), and the refusals
// built from it: a key type or size the token lacks is
// ckr.ErrUnsupportedAlgorithm naming the missing mechanism or size and
// the key types the token can make (CheckRSA, CheckEC, KeyTypes), before
// the token is asked. Real tokens differ from SoftHSM2: opencryptoki 3.8
// reports Cryptoki 2.20 and has no EC; tpm2-pkcs11 1.9 makes RSA up to
// 3072 bits.
//
// Capabilities is plain data (package hsm calls it hsm.Capabilities): it
// is logged once, shown by `signd hsm info` and, reduced, in /readyz.
package caps

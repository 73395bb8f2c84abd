package hsm

import (
	"context"
	"crypto"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/module"
)

// pooledSession returns the one session in the pool of tok (MaxSessions
// 1); its handle is 0 when the slot is empty.
func pooledSession(t *testing.T, tok *Token) module.Session {
	t.Helper()
	tok.mu.Lock()
	defer tok.mu.Unlock()
	ss := tok.pool.Take()
	tok.pool.Put(ss)
	if len(ss) != 1 {
		t.Fatalf("pool of %d sessions, want 1", len(ss))
	}
	return ss[0]
}

// TestAmbiguousErrorDiscardsSession: after CKR_GENERAL_ERROR,
// CKR_FUNCTION_FAILED or CKR_DEVICE_MEMORY the session's state is unknown
// (PKCS#11 v2.40 §5.1 calls CKR_GENERAL_ERROR unrecoverable) even when the
// token still answers C_GetTokenInfo, which many modules answer from a
// cache: the session is closed, never lent out again, and the token stays
// available. The next operation runs on a session of its own
// C_OpenSession (another serial).
func TestAmbiguousErrorDiscardsSession(t *testing.T) {
	key := faultKey(t)
	ctx := context.Background()
	sign := func(tok *Token) error {
		_, err := tok.SignDigest(ctx, key.ID, crypto.SHA256, digestOf(crypto.SHA256, []byte(t.Name())))
		return err
	}
	list := func(tok *Token) error {
		_, err := tok.Keys(ctx)
		return err
	}
	tests := []struct {
		method string
		code   uint
		op     func(*Token) error
	}{
		{"Sign", pkcs11.CKR_GENERAL_ERROR, sign},
		{"SignInit", pkcs11.CKR_GENERAL_ERROR, sign},
		{"FindObjectsInit", pkcs11.CKR_GENERAL_ERROR, list},
		{"FindObjects", pkcs11.CKR_GENERAL_ERROR, list},
		{"FindObjects", pkcs11.CKR_FUNCTION_FAILED, list},
		{"FindObjects", pkcs11.CKR_DEVICE_MEMORY, list},
		{"GetAttributeValue", pkcs11.CKR_GENERAL_ERROR, list},
	}
	for _, tt := range tests {
		name := ckr.Name(pkcs11.Error(tt.code))
		t.Run(tt.method+"/"+name, func(t *testing.T) {
			cfg := config(faultTok)
			cfg.MaxSessions = 1
			tok, fake := openFault(t, cfg)
			signAndVerify(t, tok, key.ID, key.Public)
			before := pooledSession(t, tok)
			if before.H == 0 {
				t.Fatal("no pooled session after a signature")
			}
			closes := fake.Calls("CloseSession")
			fake.FailOnce(tt.method, tt.code)
			err := tt.op(tok)
			if err == nil || ReturnCode(err) != name {
				t.Fatalf("error %v, want %s", err, name)
			}
			if fake.Calls(tt.method) == 0 {
				t.Fatalf("%s never called", tt.method)
			}
			if after := pooledSession(t, tok); after.H != 0 && after.Serial == before.Serial {
				t.Fatalf("the session (serial %d) went back to the pool after C_%s answered %s", before.Serial, tt.method, name)
			}
			if fake.Calls("CloseSession") == closes {
				t.Error("the discarded session was not closed")
			}
			if !tok.Available() || tok.Status().Outages != 0 {
				t.Fatalf("token marked down: %+v", tok.Status())
			}
			signAndVerify(t, tok, key.ID, key.Public)
			if now := pooledSession(t, tok); now.H == 0 || now.Serial == before.Serial {
				t.Fatalf("next operation on session serial %d, want a new one (was %d)", now.Serial, before.Serial)
			}
		})
	}
}

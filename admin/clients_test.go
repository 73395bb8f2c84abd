package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest/backends"
)

// A client asking for an ID-token algorithm the token cannot make a key
// for (no CKM_EC_KEY_PAIR_GEN) is refused as the operator's mistake,
// naming the mechanism and the algorithms to choose; nothing is stored.
func TestAddClientIDTokenAlgUnsupported(t *testing.T) {
	db := backends.Memory(t, memory.Options{})
	tok := softtoken.New(softtoken.Options{})
	tok.FailAlways(softtoken.OpGenerateEC, fmt.Errorf("C_GenerateKeyPair: %w", pkcs11.Error(pkcs11.CKR_MECHANISM_INVALID)))
	l := New(Config{Store: db, OIDCKeys: &oidc.KeyRing{
		Store: store.Scope(db, func(tx store.Tx) oidc.KeyRingTx { return tx }), HSM: tok, IDTokenTTL: time.Hour,
	}})
	_, err := l.AddClient(context.Background(), operator, AddClientRequest{
		ID: "rp", RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"openid"}, IDTokenAlg: "ES256",
	})
	var ae *Error
	want := `client "rp": id_token_signed_response_alg ES256 needs CKM_EC_KEY_PAIR_GEN, which the token lacks; choose RS256 or PS256`
	if !errors.As(err, &ae) || ae.Kind != KindInvalid || !strings.Contains(ae.Message, want) {
		t.Fatalf("err = %v, want %s %q", err, KindInvalid, want)
	}
	if cs, err := l.ListClients(context.Background(), operator); err != nil || len(cs) != 0 {
		t.Errorf("clients after the refusal: %v, %v", cs, err)
	}
	// RS256 needs no new mechanism: the same token takes it.
	if _, err := l.AddClient(context.Background(), operator, AddClientRequest{
		ID: "rp", RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"openid"}, IDTokenAlg: "RS256",
	}); err != nil {
		t.Errorf("RS256 client: %v", err)
	}
}

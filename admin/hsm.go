package admin

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"

	"github.com/signd/signd/hsm"
)

// TokenReporter is what HSMInfo asks of the token: *hsm.Token satisfies
// it, and so does the CLI's lazily opened token.
type TokenReporter interface {
	// CheckKeys lists the token's keys with what the token does not
	// freeze of each (hsm.Token.CheckKeys).
	CheckKeys(ctx context.Context) ([]hsm.KeyInfo, error)
	// Capabilities is what the token said of itself when it was opened.
	Capabilities() *hsm.Capabilities
}

// HSMInfo implements Service.
func (l *Local) HSMInfo(ctx context.Context, by Principal) (_ *HSMInfoView, err error) {
	a, err := l.read(ctx, by, "HSMInfo", "hsm", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	keys, err := l.keys()
	if err != nil {
		return nil, err
	}
	rep, ok := keys.(TokenReporter)
	if !ok {
		return nil, errorf(KindUnavailable, "the HSM of this process cannot report on itself")
	}
	infos, err := rep.CheckKeys(ctx)
	if err != nil {
		return nil, l.fail("hsm info", err)
	}
	v := &HSMInfoView{Capabilities: rep.Capabilities(), Keys: make([]HSMKeyView, 0, len(infos))}
	for _, k := range infos {
		v.Keys = append(v.Keys, HSMKeyView{ID: hex.EncodeToString(k.ID), Label: k.Label, Type: keyType(k), Defects: k.Defects})
		if len(k.Defects) > 0 {
			v.Unfrozen++
		}
	}
	return v, nil
}

// keyType names a key's type and size.
func keyType(k hsm.KeyInfo) string {
	if hsm.IsEC(k.Public) {
		return fmt.Sprintf("EC P-%d", k.Bits)
	}
	if _, ok := k.Public.(ed25519.PublicKey); ok {
		return "Ed25519" // the audit key
	}
	return fmt.Sprintf("RSA-%d", k.Bits)
}

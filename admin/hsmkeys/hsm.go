package hsmkeys

import (
	"context"
	"encoding/hex"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/admin/users"
	"github.com/signd/signd/oidc"
)

// HSM performs the operations on the keys in the token: signing
// credentials (credentials.go, remove.go), the time-stamping key (tsa.go),
// the OIDC signing keys (oidc.go) and what the token says of itself
// (HSMInfo).
type HSM struct {
	*act.Core
	Keys tokenkeys.KeyStore // nil: the operations answer KindUnavailable
	// OIDCKeys manages the OIDC signing keys (oidc.go); nil: the OIDC key
	// operations answer KindUnavailable.
	OIDCKeys *oidc.KeyRing
	// TSALabel is the token label of the time-stamping certificate
	// (csc.timestamp.label); "" = tsa.DefaultLabel.
	TSALabel string
	// Users reads the owner of a new credential.
	Users *users.Users
}

// HSMInfo performs Service.HSMInfo.
func (l *HSM) HSMInfo(ctx context.Context, by principal.Principal) (_ *ops.HSMInfoView, err error) {
	a, err := l.Read(ctx, by, "HSMInfo", "hsm", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	keys, err := l.KeyStore()
	if err != nil {
		return nil, err
	}
	rep, ok := keys.(tokenkeys.TokenReporter)
	if !ok {
		return nil, act.Errorf(ops.KindUnavailable, "the HSM of this process cannot report on itself")
	}
	infos, err := rep.CheckKeys(ctx)
	if err != nil {
		return nil, l.Fail("hsm info", err)
	}
	v := &ops.HSMInfoView{Capabilities: rep.Capabilities(), Keys: make([]ops.HSMKeyView, 0, len(infos))}
	for _, k := range infos {
		v.Keys = append(v.Keys, ops.HSMKeyView{ID: hex.EncodeToString(k.ID), Label: k.Label, Type: tokenkeys.KeyType(k), Defects: k.Defects})
		if len(k.Defects) > 0 {
			v.Unfrozen++
		}
	}
	return v, nil
}

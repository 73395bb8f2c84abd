package admin

import (
	"context"
	"encoding/hex"

	"github.com/signd/signd/admin/tokenkeys"
)

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
		v.Keys = append(v.Keys, HSMKeyView{ID: hex.EncodeToString(k.ID), Label: k.Label, Type: tokenkeys.KeyType(k), Defects: k.Defects})
		if len(k.Defects) > 0 {
			v.Unfrozen++
		}
	}
	return v, nil
}

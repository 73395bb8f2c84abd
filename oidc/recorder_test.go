package oidc_test

import (
	"context"
	"crypto/elliptic"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// generated is a KeyStore that remembers the HSM IDs of the keys it made.
type generated struct {
	oidc.KeyStore
	ids [][]byte
}

func (g *generated) GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error) {
	info, err := g.KeyStore.GenerateRSA(ctx, label, bits)
	if err == nil {
		g.ids = append(g.ids, info.ID)
	}
	return info, err
}

func (g *generated) GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*hsm.KeyInfo, error) {
	info, err := g.KeyStore.GenerateEC(ctx, label, curve)
	if err == nil {
		g.ids = append(g.ids, info.ID)
	}
	return info, err
}

// TestRecorderInTheChangesTransaction: every change of the key ring —
// a key created (Ensure, Create), a rotation with the purge of expired
// keys (Rotate), a purge (Purge) — hands its Recorder the write
// transaction that makes it: the entry the Recorder appends is committed
// with the change, and a Recorder that fails undoes the change (a new key
// leaves the HSM again).
func TestRecorderInTheChangesTransaction(t *testing.T) {
	f := newFixture(t)
	hsmKeys := &generated{KeyStore: token}
	f.keys.HSM = hsmKeys
	ctx := context.Background()
	errNoAudit := errors.New("the audit log cannot be written")
	refuse := oidc.Recorder(func(store.AuditAppender, oidc.KeyChange) error { return errNoAudit })
	record := oidc.Recorder(func(tx store.AuditAppender, c oidc.KeyChange) error {
		e := &store.AuditEntry{Kind: store.AuditOIDCKeysRotated, Actor: "test", Outcome: store.AuditOK, Fields: map[string]string{}}
		if c.Created != nil {
			e.Kind, e.Target = store.AuditOIDCKeyCreated, c.Created.KID
			e.Fields["state"] = string(c.Created.State)
		}
		if c.Activated != nil {
			e.Target = c.Activated.KID
		}
		if c.Retired != nil {
			e.Fields["retired"] = c.Retired.KID
		}
		if len(c.Purged) > 0 {
			e.Fields["purged"] = strings.Join(c.Purged, " ")
		}
		return tx.AppendAudit(e)
	})
	// states is "kid=state ..." of every key, in KID order (keys made at
	// one instant of the test clock are listed in KID order too).
	states := func() string {
		ks, err := f.keys.Keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, k := range ks {
			s = append(s, k.KID+"="+string(k.State))
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	sorted := func(s ...string) string {
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	var entries []string
	audit := func() string {
		t.Helper()
		entries = entries[:0]
		err := f.db.View(ctx, func(tx store.Tx) error {
			return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
				entries = append(entries, fmt.Sprintf("%s %s %v", e.Kind, e.Target, e.Fields))
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(entries, "\n")
	}

	// Ensure's first key: refused, it is neither stored nor left in the HSM.
	if _, err := f.keys.Ensure(ctx, refuse); !errors.Is(err, errNoAudit) {
		t.Fatalf("Ensure with a failing Recorder: %v", err)
	}
	if got := states(); got != "" || len(hsmKeys.ids) != 1 {
		t.Fatalf("after a refused Ensure: keys %q, %d generated", got, len(hsmKeys.ids))
	}
	if _, err := token.Key(ctx, hsmKeys.ids[0]); !errors.Is(err, hsm.ErrKeyNotFound) {
		t.Errorf("the refused key in the HSM: %v, want ErrKeyNotFound", err)
	}
	first, err := f.keys.Ensure(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	// Create: the same.
	if _, err := f.keys.Create(ctx, "", refuse); !errors.Is(err, errNoAudit) || states() != first.KID+"=active" {
		t.Fatalf("Create with a failing Recorder: %v; keys %s", err, states())
	}
	if n := len(hsmKeys.ids); n != 3 {
		t.Fatalf("%d keys generated, want 3", n)
	} else if _, err := token.Key(ctx, hsmKeys.ids[2]); !errors.Is(err, hsm.ErrKeyNotFound) {
		t.Errorf("the refused Create's key in the HSM: %v, want ErrKeyNotFound", err)
	}
	second, err := f.keys.Create(ctx, "", record)
	if err != nil {
		t.Fatal(err)
	}
	// Rotate: the rotation stands or falls with its entry.
	f.clock.Advance(oidc.DefaultPrePublish)
	if _, err := f.keys.Rotate(ctx, "", false, refuse); !errors.Is(err, errNoAudit) || states() != sorted(first.KID+"=active", second.KID+"=next") {
		t.Fatalf("Rotate with a failing Recorder: %v; keys %s", err, states())
	}
	if _, err := f.keys.Rotate(ctx, "", false, record); err != nil {
		t.Fatal(err)
	}
	// Once the first key's tokens expired, the next rotation purges it in
	// its own transaction.
	f.clock.Advance(idTokenTTL + oidc.DefaultRetireLeeway + 1)
	third, err := f.keys.Create(ctx, "", record)
	if err != nil {
		t.Fatal(err)
	}
	rot, err := f.keys.Rotate(ctx, "", true, record)
	if err != nil || len(rot.Purged) != 1 || rot.Purged[0] != first.KID {
		t.Fatalf("Rotate after the first key expired: %+v, %v", rot, err)
	}
	// Purge: a refused one leaves the record (the HSM key is gone: it is
	// removed from the store at the next purge).
	f.clock.Advance(idTokenTTL + oidc.DefaultRetireLeeway + 1)
	// The error names the keys destroyed in the HSM before the
	// transaction that failed (the admin act's failed entry carries it).
	if _, err := f.keys.Purge(ctx, refuse); !errors.Is(err, errNoAudit) || !strings.Contains(err.Error(), "expired retired keys "+second.KID+" were destroyed") ||
		states() != sorted(second.KID+"=retired", third.KID+"=active") {
		t.Fatalf("Purge with a failing Recorder: %v; keys %s", err, states())
	}
	if purged, err := f.keys.Purge(ctx, record); err != nil || len(purged) != 1 || purged[0] != second.KID {
		t.Fatalf("Purge = %v, %v", purged, err)
	}
	if purged, err := f.keys.Purge(ctx, record); err != nil || len(purged) != 0 {
		t.Fatalf("Purge with nothing to purge = %v, %v", purged, err)
	}

	want := strings.Join([]string{
		"oidc_key_created " + first.KID + " map[state:active]",
		"oidc_key_created " + second.KID + " map[state:next]",
		"oidc_keys_rotated " + second.KID + " map[retired:" + first.KID + "]",
		"oidc_key_created " + third.KID + " map[state:next]",
		"oidc_keys_rotated " + third.KID + " map[purged:" + first.KID + " retired:" + second.KID + "]",
		"oidc_keys_rotated  map[purged:" + second.KID + "]",
	}, "\n")
	if got := audit(); got != want {
		t.Errorf("audit:\n%s\nwant:\n%s", got, want)
	}
}

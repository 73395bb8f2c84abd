package oidc_test

import (
	"context"
	"crypto/elliptic"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest/backends"
)

// gatedHSM holds every GenerateRSA until n of them have generated their
// key, so n daemons all find the store empty before any of them commits;
// ec, when set, does the same for GenerateEC.
type gatedHSM struct {
	oidc.KeyStore
	wg, ec *sync.WaitGroup
}

func (g gatedHSM) GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error) {
	info, err := g.KeyStore.GenerateRSA(ctx, label, bits)
	g.wg.Done()
	g.wg.Wait()
	return info, err
}

func (g gatedHSM) GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*hsm.KeyInfo, error) {
	info, err := g.KeyStore.GenerateEC(ctx, label, curve)
	if g.ec != nil {
		g.ec.Done()
		g.ec.Wait()
	}
	return info, err
}

// TestEnsureRaceOnSharedStore: daemons sharing one store (several nodes on
// etcd) start at once on a fresh provider. Every Ensure succeeds with the
// same active key, exactly one key is published, and the losers' HSM keys
// are destroyed again.
func TestEnsureRaceOnSharedStore(t *testing.T) {
	const nodes = 5
	db := backends.Memory(t, memory.Options{})
	ctx := context.Background()
	before := oidcKeyLabels(t, ctx)

	var gate sync.WaitGroup
	gate.Add(nodes)
	kids, errs := ensureAtOnce(ctx, nodes, func() *oidc.KeyRing {
		return &oidc.KeyRing{Store: keyRingStore(db), HSM: gatedHSM{KeyStore: token, wg: &gate}, IDTokenTTL: idTokenTTL}
	})

	ring := &oidc.KeyRing{Store: keyRingStore(db), HSM: token, IDTokenTTL: idTokenTTL}
	t.Cleanup(func() { destroyKeys(t, ring) })
	ks, err := ring.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 || ks[0].State != store.SigningKeyActive {
		var got []string
		for _, k := range ks {
			got = append(got, k.KID+" "+string(k.State))
		}
		t.Fatalf("published keys %v, want exactly one active key", got)
	}
	for i := range nodes {
		if errs[i] != nil || kids[i] != ks[0].KID {
			t.Errorf("node %d: Ensure = %q, %v; want the active key %s", i, kids[i], errs[i], ks[0].KID)
		}
	}
	if added := len(oidcKeyLabels(t, ctx)) - len(before); added != 1 {
		t.Errorf("%d new ID-token key pairs left in the HSM, want 1 (the losers' keys destroyed)", added)
	}
}

func oidcKeyLabels(t *testing.T, ctx context.Context) []string {
	t.Helper()
	infos, err := token.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, k := range infos {
		if strings.HasPrefix(k.Label, "signd-oidc-") {
			labels = append(labels, k.Label)
		}
	}
	return labels
}

// TestEnsureRaceTwoAlgorithms: daemons configured for ES256 start at once
// on a fresh provider and each generates an ES256 and an RS256 key. Every
// Ensure reports the same ES256 key; exactly one active key per algorithm
// is published and the losers' key pairs of both kinds are destroyed.
func TestEnsureRaceTwoAlgorithms(t *testing.T) {
	const nodes = 4
	db := backends.Memory(t, memory.Options{})
	ctx := context.Background()
	before := oidcKeyLabels(t, ctx)

	var rsaGate, ecGate sync.WaitGroup
	rsaGate.Add(nodes)
	ecGate.Add(nodes)
	kids, errs := ensureAtOnce(ctx, nodes, func() *oidc.KeyRing {
		return &oidc.KeyRing{Store: keyRingStore(db), HSM: gatedHSM{KeyStore: token, wg: &rsaGate, ec: &ecGate}, Algorithm: "ES256", IDTokenTTL: idTokenTTL}
	})

	ring := &oidc.KeyRing{Store: keyRingStore(db), HSM: token, IDTokenTTL: idTokenTTL}
	t.Cleanup(func() { destroyKeys(t, ring) })
	ks, err := ring.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	es := ""
	for _, k := range ks {
		got = append(got, fmt.Sprintf("%s %s", k.Algorithm, k.State))
		if k.Algorithm == "ES256" {
			es = k.KID
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"ES256 active", "RS256 active"}) {
		t.Fatalf("published keys %v, want one active ES256 and one active RS256 key", got)
	}
	for i := range nodes {
		if errs[i] != nil || kids[i] != es {
			t.Errorf("node %d: Ensure = %q, %v; want the ES256 key %s", i, kids[i], errs[i], es)
		}
	}
	if added := len(oidcKeyLabels(t, ctx)) - len(before); added != 2 {
		t.Errorf("%d new ID-token key pairs left in the HSM, want 2 (the losers' keys destroyed)", added)
	}
}

// ensureAtOnce runs Ensure on n key rings (ring makes each) at once; it
// returns each one's key ID and error.
func ensureAtOnce(ctx context.Context, n int, ring func() *oidc.KeyRing) ([]string, []error) {
	kids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		r := ring()
		wg.Go(func() {
			k, err := r.Ensure(ctx, nil)
			if err == nil {
				kids[i] = k.KID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return kids, errs
}

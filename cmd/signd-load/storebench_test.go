package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/config"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd/etcdtest"
)

// TestPrepareAndStore: prepare writes SADs into each backend and store
// consumes every one of them exactly once, each with its audit entry; a
// second run finds them spent.
func TestPrepareAndStore(t *testing.T) {
	dir := t.TempDir()
	srv, err := etcdtest.Start(filepath.Join(dir, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for name, storeYAML := range map[string]string{
		"bolt": "store:\n  path: " + filepath.Join(dir, "signd.db") + "\n",
		"etcd": "store:\n  backend: etcd\n  etcd:\n    endpoints: [" + srv.Endpoints[0] + "]\n    prefix: /bench/\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfgPath := filepath.Join(dir, name+".yaml")
			writeConfig(t, cfgPath, storeYAML)
			cfg, err := config.Load(config.Options{File: cfgPath})
			if err != nil {
				t.Fatal(err)
			}
			db, err := openStore(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(context.Background(), func(tx store.Tx) error {
				if err := tx.CreateUser(&store.User{ID: "u-bench", Username: "bench", Status: store.UserActive}); err != nil {
					return err
				}
				return tx.CreateCredential(&store.Credential{ID: "c1", Owner: "bench", KeyID: []byte("k"), Label: "l",
					Algorithm: store.AlgRSA2048, KeyBits: 2048, Status: store.CredentialEnabled, Chain: [][]byte{[]byte("cert")}})
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, name+".json")
			var out bytes.Buffer
			if err := run(context.Background(), []string{"prepare", "--config", cfgPath, "--user", "bench", "--client", "rp",
				"--credential", "c1", "--count", "250", "--out", in}, &out); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			// Bounded by the 250 SADs, not by the clock: a loaded machine
			// (or -race) may take longer than the default 5 s.
			if err := run(context.Background(), []string{"store", "--config", cfgPath, "--in", in, "--concurrency", "4", "--duration", "2m"}, &out); err != nil {
				t.Fatalf("store: %v\n%s", err, out.String())
			}
			if !strings.HasPrefix(out.String(), "mode=store c=4 n=250 errors=0 ") {
				t.Fatalf("store: %q, want 250 commits without error", out.String())
			}
			out.Reset()
			if err := run(context.Background(), []string{"store", "--config", cfgPath, "--in", in}, &out); err == nil ||
				!strings.Contains(out.String(), "n=0 errors=250 ") {
				t.Fatalf("second run: %v %q, want every SAD refused as spent", err, out.String())
			}
		})
	}
}

func TestStoreArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"store"}, "store needs --config and --in"},
		{[]string{"store", "--config", "x.yaml"}, "store needs --config and --in"},
		{[]string{"store", "--config", "x.yaml", "--in", "f", "--concurrency", "0"}, "--concurrency must be 1 to 256"},
		{[]string{"store", "--config", "x.yaml", "--in", "f", "--concurrency", "257"}, "--concurrency must be 1 to 256"},
		{[]string{"store", "--config", "x.yaml", "--in", "f", "--duration", "6m"}, "--duration up to 5m0s"},
		{[]string{"store", "--config", "x.yaml", "--in", "f", "--duration", "soon"}, `invalid value "soon"`},
		{[]string{"store", "--config", "x.yaml", "--in", filepath.Join(t.TempDir(), "absent")}, "no such file"},
	} {
		if err := run(context.Background(), tc.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func writeConfig(t *testing.T, path, storeYAML string) {
	t.Helper()
	pin := filepath.Join(filepath.Dir(path), "pin")
	if err := os.WriteFile(pin, []byte("1234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf("server:\n  base_url: http://127.0.0.1:8443\n%spkcs11:\n  module: /usr/lib/softhsm/libsofthsm2.so\n  token_label: t\n  pin_file: %s\n", storeYAML, pin)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

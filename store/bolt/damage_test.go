package bolt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

// buildStore writes a real store with users, audit entries and some
// deleted records (so the freelist is not empty), and closes it.
func buildStore(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := db.Update(ctx, func(tx store.Tx) error {
			if err := tx.CreateUser(&store.User{ID: fmt.Sprintf("id-%02d", i), Username: fmt.Sprintf("user%02d", i), Status: store.UserActive}); err != nil {
				return err
			}
			for range 3 {
				if err := tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: "alice", Client: "rp",
					Credential: "cred-1", Hashes: []string{strings.Repeat("ab", 32)}, Outcome: store.AuditGranted}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		hash := store.Fingerprint(fmt.Sprintf("token-%d", i))
		if err := db.Update(ctx, func(tx store.Tx) error {
			return tx.CreateToken(&store.Token{Hash: hash, Kind: store.TokenAccess, ClientID: "rp", Username: "user01",
				Scopes: []string{"service"}, ExpiresAt: time.Now().Add(time.Hour)})
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(ctx, func(tx store.Tx) error { return tx.DeleteToken(hash) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// rawMeta is what the tests need of the newest meta page.
type rawMeta struct {
	pageSize int64
	freelist uint64
	root     uint64
}

func readMeta(t *testing.T, data []byte) rawMeta {
	t.Helper()
	ne := binary.NativeEndian
	ps := int64(ne.Uint32(data[16+8:]))
	m0, m1 := data[16:80], data[ps+16:ps+80]
	m := m0
	if ne.Uint64(m1[48:]) > ne.Uint64(m0[48:]) {
		m = m1
	}
	return rawMeta{pageSize: ps, freelist: ne.Uint64(m[32:]), root: ne.Uint64(m[16:])}
}

// bucketRoot returns the root page of a top-level bucket (read with bbolt
// before the damage).
func bucketRoot(t *testing.T, path, name string) uint64 {
	t.Helper()
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var root uint64
	_ = raw.View(func(tx *bbolt.Tx) error {
		root = uint64(tx.Bucket([]byte(name)).RootPage())
		return nil
	})
	if root == 0 {
		t.Fatalf("bucket %s is inline; the test needs a page", name)
	}
	return root
}

// firstLeaf descends from page id through first children to a leaf.
func firstLeaf(data []byte, ps int64, id uint64) uint64 {
	ne := binary.NativeEndian
	for {
		p := data[int64(id)*ps:]
		if ne.Uint16(p[8:]) != 0x01 { // not a branch
			return id
		}
		id = ne.Uint64(p[16+8:]) // element 0's child
	}
}

func damageFile(t *testing.T, path string, fn func(data []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func pngBytes() []byte {
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00\x90\x91\x68\x36")
	return append(b, bytes.Repeat([]byte{0x42}, 20000)...)
}

// TestOpenRefusesDamagedFiles: every kind of file that is not an intact
// store is refused with an error that names the file and the recovery,
// is left exactly as it was (never re-initialised), and nothing panics or
// faults; store check names the same problem.
func TestOpenRefusesDamagedFiles(t *testing.T) {
	// damaged builds a store and then changes its file by damage.
	damaged := func(damage func(d []byte) []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			buildStore(t, path)
			damageFile(t, path, damage)
		}
	}
	// retyped builds a store and gives the page which names the page type
	// flags.
	retyped := func(which func(m rawMeta) uint64, flags uint16) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			buildStore(t, path)
			damageFile(t, path, func(d []byte) []byte {
				m := readMeta(t, d)
				binary.NativeEndian.PutUint16(d[int64(which(m))*m.pageSize+8:], flags)
				return d
			})
		}
	}
	tests := []struct {
		name   string
		make   func(t *testing.T, path string)
		reason string
	}{
		{"empty file", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) }, "empty (0 bytes)"},
		{"random bytes", func(t *testing.T, path string) {
			b := make([]byte, 64<<10)
			rand.Read(b)
			os.WriteFile(path, b, 0o600)
		}, "not a bbolt database file"},
		{"a PNG image", func(t *testing.T, path string) { os.WriteFile(path, pngBytes(), 0o600) }, "not a bbolt database file"},
		{"truncated copy", damaged(func(d []byte) []byte { return d[:len(d)/2] }), "truncated"},
		{"truncated to one page", damaged(func(d []byte) []byte { return d[:os.Getpagesize()] }), "shorter than the two meta pages"},
		{"flipped byte in meta page 0", damaged(func(d []byte) []byte { d[16+40] ^= 0x01; return d }), "meta page 0: checksum mismatch"},                  // its high water mark
		{"flipped byte in meta page 1", damaged(func(d []byte) []byte { d[os.Getpagesize()+16+48] ^= 0x80; return d }), "meta page 1: checksum mismatch"}, // its txid
		{"meta page 0 overwritten", damaged(func(d []byte) []byte { copy(d, pngBytes()[:512]); return d }), "meta page 0: no bbolt magic number (meta page 1 is intact"},
		{"freelist page of another type", retyped(func(m rawMeta) uint64 { return m.freelist }, 0x02), "not a freelist page"},
		{"root page of another type", retyped(func(m rawMeta) uint64 { return m.root }, 0x10), "not a branch or leaf page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "signd.db")
			tt.make(t, path)
			before, _ := os.ReadFile(path)
			db, err := bolt.Open(path, bolt.Options{Timeout: time.Second})
			if err == nil {
				db.Close()
				t.Fatalf("Open succeeded on %s", tt.name)
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("error does not wrap store.ErrCorrupt: %v", err)
			}
			for _, want := range []string{path, tt.reason, "signd store backup", "signd store check"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("Open changed the file (%d bytes before, %d after)", len(before), len(after))
			}
			rep, err := bolt.CheckFile(context.Background(), path, time.Second)
			if err != nil {
				t.Fatalf("CheckFile: %v", err)
			}
			if rep.OK || !strings.Contains(rep.Problem, tt.reason) {
				t.Errorf("CheckFile: ok=%v problem %q, want %q", rep.OK, rep.Problem, tt.reason)
			}
		})
	}
}

// TestDataPageDamage: damage below the meta pages passes Open's cheap
// checks; store.verify_on_open and Check find it and name it, and reading
// the damaged pages fails with store.ErrCorrupt instead of a panic or a
// fault.
func TestDataPageDamage(t *testing.T) {
	ne := binary.NativeEndian
	tests := []struct {
		name    string
		damage  func(t *testing.T, path string, d []byte) []byte
		problem string
		readErr bool // reading the audit log fails (else it reads and the chain breaks)
	}{
		{"audit entry changed", func(t *testing.T, path string, d []byte) []byte {
			return bytes.ReplaceAll(d, []byte(`"user":"alice"`), []byte(`"user":"alicf"`))
		}, "audit log broken at entry 1", false},
		{"leaf page type flipped", func(t *testing.T, path string, d []byte) []byte {
			ps := int64(os.Getpagesize())
			leaf := firstLeaf(d, ps, bucketRoot(t, path, "audit"))
			d[int64(leaf)*ps+8] ^= 0x40
			return d
		}, "not a branch or leaf page", true},
		{"element position out of the page", func(t *testing.T, path string, d []byte) []byte {
			ps := int64(os.Getpagesize())
			leaf := firstLeaf(d, ps, bucketRoot(t, path, "audit"))
			ne.PutUint32(d[int64(leaf)*ps+16+4:], 0x7fff0000) // element 0's pos
			return d
		}, "key outside the page", true},
		{"branch child beyond the file", func(t *testing.T, path string, d []byte) []byte {
			ps := int64(os.Getpagesize())
			root := bucketRoot(t, path, "audit")
			if ne.Uint16(d[int64(root)*ps+8:]) != 0x01 {
				t.Fatal("audit root is not a branch page")
			}
			ne.PutUint64(d[int64(root)*ps+16+8:], 1<<40) // element 0's child
			return d
		}, "outside the", true},
		{"freelist names a page in use", func(t *testing.T, path string, d []byte) []byte {
			m := readMeta(t, d)
			fl := d[int64(m.freelist)*m.pageSize:]
			if ne.Uint16(fl[10:]) == 0 {
				t.Fatal("the freelist is empty")
			}
			ne.PutUint64(fl[16:], bucketRoot(t, path, "audit"))
			return d
		}, "reachable freed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "signd.db")
			buildStore(t, path)
			damageFile(t, path, func(d []byte) []byte { return tt.damage(t, path, d) })

			db, err := bolt.Open(path, bolt.Options{Timeout: time.Second, VerifyOnOpen: true})
			if err == nil {
				db.Close()
				t.Fatal("Open with VerifyOnOpen succeeded on a damaged store")
			}
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), tt.problem) || !strings.Contains(err.Error(), path) {
				t.Errorf("VerifyOnOpen: %v, want store.ErrCorrupt naming %q and the file", err, tt.problem)
			}

			rep, err := bolt.CheckFile(ctx, path, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || !strings.Contains(rep.Problem, tt.problem) {
				t.Errorf("CheckFile: ok=%v problem %q, want %q", rep.OK, rep.Problem, tt.problem)
			}

			// Without verification Open succeeds; reading the damage is an
			// error, never a panic or a fault.
			db, err = bolt.Open(path, bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			var broken *store.AuditBrokenError
			err = db.View(ctx, func(tx store.Tx) error { _, _, err := store.VerifyAudit(tx); return err })
			switch {
			case tt.readErr && !errors.Is(err, store.ErrCorrupt):
				t.Errorf("reading the damaged audit log: %v, want store.ErrCorrupt", err)
			case tt.readErr && !errors.Is(db.Health(), store.ErrCorrupt):
				t.Errorf("Health after reading damage: %v, want store.ErrCorrupt", db.Health())
			case !tt.readErr && err != nil && !errors.As(err, &broken):
				t.Errorf("reading the audit log: %v", err)
			}
		})
	}
}

// TestCheckIntactStore: a store in use checks clean, online and offline.
func TestCheckIntactStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signd.db")
	buildStore(t, path)
	rep, err := bolt.CheckFile(context.Background(), path, time.Second)
	if err != nil || !rep.OK {
		t.Fatalf("CheckFile: %v %+v", err, rep)
	}
	if rep.AuditEntries != 120 || rep.Records < 40 || rep.AuditHead == "" || rep.Pages == 0 {
		t.Errorf("report %+v", rep)
	}
	db, err := bolt.Open(path, bolt.Options{VerifyOnOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	online, err := db.Check(context.Background())
	if err != nil || !online.OK || online.AuditHead != rep.AuditHead {
		t.Fatalf("Check: %v %+v", err, online)
	}
	// The check rolled back: it left no failure behind and writes go on.
	if err := db.Health(); err != nil {
		t.Error(err)
	}
	if err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.CreateUser(&store.User{ID: "id-after", Username: "after-check", Status: store.UserActive})
	}); err != nil {
		t.Error(err)
	}
}

package checkpoint_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/checkpoint/checkpointtest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

const origin = "sign.example.org/audit"

var t0 = time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC)

func edKey(t testing.TB) (*checkpoint.Key, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := checkpoint.NewKey(origin, priv)
	if err != nil {
		t.Fatal(err)
	}
	return k, priv
}

func ecKey(t testing.TB) *checkpoint.Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := checkpoint.NewKey(origin, priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func hash(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// TestEd25519NoteVerifiesWithSumdb: an Ed25519 checkpoint is a signed note
// that golang.org/x/mod/sumdb/note opens with the verifier key alone, and
// its text is the tlog-checkpoint body.
func TestEd25519NoteVerifiesWithSumdb(t *testing.T) {
	k, _ := edKey(t)
	c := &checkpoint.Checkpoint{Origin: origin, Size: 42, Hash: hash(7), Time: t0}
	msg, err := checkpoint.Sign(c, k)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(k.VerifierKey)
	if err != nil {
		t.Fatalf("sumdb/note refuses the verifier key %q: %v", k.VerifierKey, err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		t.Fatalf("sumdb/note: %v\n%s", err, msg)
	}
	want := origin + "\n42\n" + base64.StdEncoding.EncodeToString(hash(7)) + "\ntime 2026-11-27T21:00:00Z\n"
	if n.Text != want || k.Algorithm != "Ed25519" {
		t.Errorf("text %q (%s), want %q", n.Text, k.Algorithm, want)
	}
	got, err := checkpoint.Open(msg, v, origin)
	if err != nil || got.Size != 42 || !bytes.Equal(got.Hash, hash(7)) || !got.Time.Equal(t0) {
		t.Errorf("Open: %+v, %v", got, err)
	}
}

// TestECDSANote: an ECDSA P-256 checkpoint carries signature type 0x02;
// its verifier key round-trips through NewVerifier.
func TestECDSANote(t *testing.T) {
	k := ecKey(t)
	c := &checkpoint.Checkpoint{Origin: origin, Size: 3, Hash: hash(1), Time: t0}
	msg, err := checkpoint.Sign(c, k)
	if err != nil {
		t.Fatal(err)
	}
	v, err := checkpoint.NewVerifier(k.VerifierKey)
	if err != nil {
		t.Fatalf("NewVerifier(%q): %v", k.VerifierKey, err)
	}
	if _, err := checkpoint.Open(msg, v, origin); err != nil {
		t.Fatalf("Open: %v\n%s", err, msg)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.SplitN(k.VerifierKey, "+", 3)[2])
	if raw[0] != 0x02 || k.Algorithm != "ECDSA P-256" {
		t.Errorf("verifier key type 0x%02x (%s), want 0x02 ECDSA P-256", raw[0], k.Algorithm)
	}
	if _, err := note.NewVerifier(k.VerifierKey); err == nil {
		t.Error("sumdb/note took an ECDSA verifier key as Ed25519")
	}
}

// TestOpenRefuses: every way a checkpoint can be wrong is refused with
// its own error and a message that says what.
func TestOpenRefuses(t *testing.T) {
	k, priv := edKey(t)
	other, _ := edKey(t)
	sign := func(text string, key *checkpoint.Key) []byte {
		msg, err := note.Sign(&note.Note{Text: text}, key.Signer)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	body := origin + "\n5\n" + base64.StdEncoding.EncodeToString(hash(2)) + "\n"
	good := sign(body, k)
	otherText := bytes.Replace(good, []byte("\n5\n"), []byte("\n6\n"), 1)
	// A signature line of the right key name and ID over another text.
	resigned := sign(origin+"\n6\n"+base64.StdEncoding.EncodeToString(hash(2))+"\n", k)
	sigLine := resigned[bytes.LastIndex(resigned, []byte("\n\n"))+2:]
	spliced := append(append([]byte(body), '\n'), sigLine...)
	_ = priv

	tests := []struct {
		name   string
		msg    []byte
		origin string
		err    error
		msg2   string
	}{
		{"not a note", []byte("hello\n"), origin, checkpoint.ErrMalformed, "not a signed note"},
		{"no signature", []byte(body + "\n"), origin, checkpoint.ErrMalformed, "not a signed note"},
		{"control character", append([]byte("a\x01"), good...), origin, checkpoint.ErrMalformed, "not a signed note"},
		{"wrong key", sign(body, other), origin, checkpoint.ErrSignature, "no signature by " + origin},
		{"text changed after signing", otherText, origin, checkpoint.ErrSignature, "not over this text"},
		{"signature over other text", spliced, origin, checkpoint.ErrSignature, "not over this text"},
		{"size 0", sign(origin+"\n0\n"+base64.StdEncoding.EncodeToString(hash(0))+"\n", k), origin, checkpoint.ErrMalformed, "size 0"},
		{"origin mismatch", good, "other.example/audit", checkpoint.ErrOrigin, `its origin is "sign.example.org/audit", this log's is "other.example/audit"`},
		{"leading zero", sign(origin+"\n05\n"+base64.StdEncoding.EncodeToString(hash(2))+"\n", k), origin, checkpoint.ErrMalformed, `size "05"`},
		{"negative size", sign(origin+"\n-5\n"+base64.StdEncoding.EncodeToString(hash(2))+"\n", k), origin, checkpoint.ErrMalformed, `size "-5"`},
		{"short hash", sign(origin+"\n5\n"+base64.StdEncoding.EncodeToString(hash(2)[:31])+"\n", k), origin, checkpoint.ErrMalformed, "not the base64 of 32 bytes"},
		{"two lines", sign(origin+"\n5\n", k), origin, checkpoint.ErrMalformed, "2 lines"},
		{"empty extension", sign(body+"\n\nx\n", k), origin, checkpoint.ErrMalformed, ""},
		{"two time lines", sign(body+"time 2026-01-01T00:00:00Z\ntime 2026-01-01T00:00:00Z\n", k), origin, checkpoint.ErrMalformed, "two time lines"},
		{"bad time", sign(body+"time yesterday\n", k), origin, checkpoint.ErrMalformed, "not RFC 3339"},
		{"oversized", append(bytes.Repeat([]byte("x"), checkpoint.MaxNote), good...), origin, checkpoint.ErrMalformed, "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := checkpoint.Open(tt.msg, k.Verifier, tt.origin)
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg2) {
				t.Errorf("Open = %+v, %v; want %v with %q", c, err, tt.err, tt.msg2)
			}
		})
	}
	if _, err := checkpoint.Open(good, k.Verifier, origin); err != nil {
		t.Fatalf("the good note: %v", err)
	}
}

// TestNewVerifierRefuses: verifier keys that are not one.
func TestNewVerifierRefuses(t *testing.T) {
	k := ecKey(t)
	parts := strings.SplitN(k.VerifierKey, "+", 3)
	for _, vkey := range []string{
		"", "name", "name+1234abcd", "name+12+AQ==", "name+1234abcd+!!!",
		parts[0] + "+00000000+" + parts[2], // wrong key ID
		"name+1234abcd+" + base64.StdEncoding.EncodeToString([]byte{0x07, 1, 2, 3}),
		"name+1234abcd+" + base64.StdEncoding.EncodeToString([]byte{0x02, 1, 2, 3}),
	} {
		if _, err := checkpoint.NewVerifier(vkey); !errors.Is(err, checkpoint.ErrKey) {
			t.Errorf("NewVerifier(%q) = %v, want ErrKey", vkey, err)
		}
	}
}

// env is a real bbolt store with n audit entries and a Maker writing to a
// temporary directory.
type env struct {
	path string
	db   *bolt.DB
	mk   *checkpoint.Maker
	key  *checkpoint.Key
	dir  string
}

func newEnv(t *testing.T, n int) *env {
	t.Helper()
	e := &env{path: filepath.Join(t.TempDir(), "signd.db"), dir: filepath.Join(t.TempDir(), "checkpoints")}
	e.key, _ = edKey(t)
	e.open(t)
	e.append(t, n)
	return e
}

func (e *env) open(t *testing.T) {
	t.Helper()
	db, err := bolt.Open(e.path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.db = db
	t.Cleanup(func() { db.Close() })
	now := t0
	e.mk = &checkpoint.Maker{Store: db, Origin: origin, Dir: e.dir, Now: func() time.Time { now = now.Add(time.Minute); return now },
		Key: func(_ context.Context, name string) (*checkpoint.Key, error) {
			if name == origin {
				return e.key, nil
			}
			return nil, fmt.Errorf("no key for %s", name)
		}}
}

func (e *env) append(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		err := e.db.Update(context.Background(), func(tx store.Tx) error {
			return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditUserAdded, Actor: "uid:0 (root)", Target: fmt.Sprintf("user:u%d", i), Outcome: store.AuditOK})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// verify runs Verify against c and the plain chain check (its error is
// returned in the report's place, not as a failure of the call).
func (e *env) verify(t *testing.T, c *checkpoint.Checkpoint) (r *checkpoint.Report, plain error) {
	t.Helper()
	err := e.db.View(context.Background(), func(tx store.Tx) error {
		_, _, plain = store.VerifyAudit(tx)
		var err error
		r, err = checkpoint.Verify(tx, c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, plain
}

func (e *env) reopen(t *testing.T, damage func()) {
	t.Helper()
	e.db.Close()
	damage()
	e.open(t)
}

// TestMakeAndExtend: a checkpoint covers entries 1..N, its own audit
// entry is N+1; the log extends it as it grows; a timed checkpoint with
// nothing new but that entry is skipped; the files are in the directory.
func TestMakeAndExtend(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 5)
	m, err := e.mk.Make(ctx, "uid:0 (root)", false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Checkpoint.Size != 5 || m.Unchanged {
		t.Fatalf("first checkpoint covers %d (unchanged %v), want 5", m.Checkpoint.Size, m.Unchanged)
	}
	latest, err := checkpoint.ReadLatest(e.dir)
	if err != nil || !bytes.Equal(latest, m.Note) {
		t.Fatalf("latest file: %v %q", err, latest)
	}
	if hist, err := os.ReadFile(filepath.Join(e.dir, "checkpoint.5")); err != nil || !bytes.Equal(hist, m.Note) {
		t.Fatalf("history file: %v", err)
	}
	if vkey, err := os.ReadFile(filepath.Join(e.dir, checkpoint.KeyName)); err != nil || string(vkey) != e.key.VerifierKey+"\n" {
		t.Fatalf("verifier key file: %q, %v", vkey, err)
	}
	var entry *store.AuditEntry
	_ = e.db.View(ctx, func(tx store.Tx) error {
		return store.AuditEntries(tx, 6, func(a *store.AuditEntry) error { entry = a; return nil })
	})
	if entry == nil || entry.Kind != store.AuditCheckpoint || entry.Seq != 6 || entry.Actor != "uid:0 (root)" ||
		entry.Fields["size"] != "5" || entry.Fields["key"] != e.key.VerifierKey {
		t.Fatalf("entry 6 = %+v, want the audit_checkpoint entry of size 5", entry)
	}
	if skipped, err := e.mk.Make(ctx, "signd", true); err != nil || !skipped.Unchanged || skipped.Checkpoint.Size != 5 {
		t.Fatalf("timed checkpoint with only its own entry new: %v; want the checkpoint of 5 unchanged", describe(skipped, err))
	}
	e.append(t, 3)
	m2, err := e.mk.Make(ctx, "signd", true)
	if err != nil || m2.Checkpoint.Size != 9 {
		t.Fatalf("second checkpoint: %+v, %v; want size 9", m2, err)
	}
	for _, c := range []*checkpoint.Checkpoint{m.Checkpoint, m2.Checkpoint} {
		if r, plain := e.verify(t, c); plain != nil || !r.Extends || r.Entries != 10 {
			t.Errorf("log against checkpoint %d: plain %v, %+v", c.Size, plain, r)
		}
	}
	// A fresh Maker (another process) continues from the directory.
	e.reopen(t, func() {})
	e.append(t, 1)
	if m3, err := e.mk.Make(ctx, "signd", false); err != nil || m3.Checkpoint.Size != 11 {
		t.Fatalf("checkpoint after a restart: %+v, %v", m3, err)
	}
}

// TestTruncatedAndRewritten: a log cut off after a checkpoint, and one
// rewritten and chained again, pass the plain chain check but not the
// checkpoint; Make then refuses to sign and records why.
func TestTruncatedAndRewritten(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		damage func(path string)
		want   error
		msg    string
	}{
		{"truncated", func(path string) { checkpointtest.Truncate(t, path, 5) }, checkpoint.ErrTruncated, "the log has 5 entries, the checkpoint covers 8"},
		{"rewritten", func(path string) {
			checkpointtest.Rewrite(t, path, 3, func(a *store.AuditEntry) { a.Actor = "uid:1001 (mallory)" })
		}, checkpoint.ErrRewritten, "entry 8's digest is"},
		{"rewritten after", func(path string) {
			checkpointtest.Rewrite(t, path, 9, func(a *store.AuditEntry) { a.Actor = "uid:1001 (mallory)" })
		}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 8)
			m, err := e.mk.Make(ctx, "signd", false)
			if err != nil {
				t.Fatal(err)
			}
			e.append(t, 2)
			e.reopen(t, func() { tt.damage(e.path) })
			r, plain := e.verify(t, m.Checkpoint)
			if plain != nil {
				t.Fatalf("plain chain check: %v; the damage must be one it accepts", plain)
			}
			if tt.want == nil {
				if !r.Extends {
					t.Fatalf("an entry after the checkpoint was changed: %v; the checkpoint still holds", r.Problem)
				}
				return
			}
			if r.Extends || !errors.Is(r.Problem, tt.want) || !strings.Contains(r.Problem.Error(), tt.msg) {
				t.Fatalf("Verify = extends %v, %v; want %v with %q", r.Extends, r.Problem, tt.want, tt.msg)
			}
			if _, err := e.mk.Make(ctx, "signd", false); !errors.Is(err, tt.want) {
				t.Fatalf("Make on the damaged log: %v, want %v", err, tt.want)
			}
			var refused *store.AuditEntry
			_ = e.db.View(ctx, func(tx store.Tx) error {
				return store.AuditEntries(tx, 1, func(a *store.AuditEntry) error {
					if a.Kind == store.AuditCheckpoint && a.Outcome == store.AuditRefused {
						refused = a
					}
					return nil
				})
			})
			if refused == nil || !strings.Contains(refused.Reason, tt.want.Error()) {
				t.Errorf("refusal entry %+v", refused)
			}
		})
	}
}

// TestFork: a log restored from a backup taken before a checkpoint and
// grown again to the same size is a fork: Verify says rewritten, and the
// directory keeps the first checkpoint of that size.
func TestFork(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 4)
	backup, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	e.append(t, 2)
	m, err := e.mk.Make(ctx, "signd", false)
	if err != nil {
		t.Fatal(err)
	}
	e.reopen(t, func() {
		if err := os.WriteFile(e.path, backup, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	e.append(t, 2)
	if r, _ := e.verify(t, m.Checkpoint); r.Extends || !errors.Is(r.Problem, checkpoint.ErrRewritten) {
		t.Fatalf("forked log: %+v, want ErrRewritten", r)
	}
	// A Maker that lost the latest file still will not replace the
	// history of that size.
	if err := os.Remove(filepath.Join(e.dir, checkpoint.LatestName)); err != nil {
		t.Fatal(err)
	}
	e.reopen(t, func() {})
	if _, err := e.mk.Make(ctx, "signd", false); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Make over a fork: %v, want ErrConflict", err)
	}
	if hist, _ := os.ReadFile(filepath.Join(e.dir, "checkpoint.6")); !bytes.Equal(hist, m.Note) {
		t.Error("the first checkpoint of size 6 was replaced")
	}
}

// TestMakeRefusesForeignLatest: a latest checkpoint the audit key did not
// sign stops checkpoints, naming the directory.
func TestMakeRefusesForeignLatest(t *testing.T) {
	e := newEnv(t, 2)
	other, _ := edKey(t)
	msg, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: origin, Size: 1, Hash: hash(3)}, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Write(e.dir, 1, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mk.Make(context.Background(), "signd", false); err == nil || !strings.Contains(err.Error(), e.dir) || !errors.Is(err, checkpoint.ErrSignature) {
		t.Fatalf("Make after a foreign latest checkpoint: %v", err)
	}
	if _, err := (&checkpoint.Maker{Store: e.db, Origin: origin, Dir: e.dir,
		Key: func(context.Context, string) (*checkpoint.Key, error) { return nil, checkpoint.ErrNoKey }}).Make(context.Background(), "signd", false); !errors.Is(err, checkpoint.ErrNoKey) {
		t.Fatalf("Make without a key: %v", err)
	}
}

// TestVerifySizeZero: a checkpoint of size 0 is refused by Verify too,
// not judged against the log.
func TestVerifySizeZero(t *testing.T) {
	e := newEnv(t, 2)
	err := e.db.View(context.Background(), func(tx store.Tx) error {
		_, err := checkpoint.Verify(tx, &checkpoint.Checkpoint{Origin: origin, Hash: hash(0)})
		return err
	})
	if !errors.Is(err, checkpoint.ErrMalformed) {
		t.Fatalf("Verify of size 0: %v, want ErrMalformed", err)
	}
}

// TestEmptyLog: nothing to checkpoint.
func TestEmptyLog(t *testing.T) {
	e := newEnv(t, 0)
	if _, err := e.mk.Make(context.Background(), "signd", false); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("Make on an empty log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, checkpoint.LatestName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a checkpoint of the empty log was written: %v", err)
	}
}

var _ crypto.Signer = ed25519.PrivateKey(nil)

// describe names what Make returned, for a failure message.
func describe(m *checkpoint.Made, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("checkpoint of %d entries (unchanged %v, file %s)", m.Checkpoint.Size, m.Unchanged, m.Path)
}

// TestMakeConcurrent: the daemon's timer and the admin socket share one
// Maker; checkpoints asked at once while entries are appended are made
// one at a time, every one is in the directory, and the log extends each.
func TestMakeConcurrent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3)
	const n = 8
	made := make(chan *checkpoint.Made, n)
	errs := make(chan error, 2*n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			m, err := e.mk.Make(ctx, fmt.Sprintf("uid:%d", i), i%2 == 0)
			if err != nil {
				errs <- err
				return
			}
			made <- m
		}()
		go func() {
			defer wg.Done()
			<-start
			errs <- e.db.Update(ctx, func(tx store.Tx) error {
				return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditUserAdded, Actor: "uid:0 (root)", Outcome: store.AuditOK})
			})
		}()
	}
	close(start)
	wg.Wait()
	close(made)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for m := range made {
		if hist, err := os.ReadFile(m.Path); err != nil || !bytes.Equal(hist, m.Note) {
			t.Errorf("checkpoint of %d: %s holds %q (%v)", m.Checkpoint.Size, m.Path, hist, err)
		}
		if r, plain := e.verify(t, m.Checkpoint); plain != nil || !r.Extends {
			t.Errorf("log against checkpoint %d: %v %v", m.Checkpoint.Size, plain, r.Problem)
		}
	}
}

// TestPeek: the latest checkpoint's size and time as written, read without
// the key; none is os.ErrNotExist; a file that is not a signed note, or
// whose body does not parse, is ErrMalformed.
func TestPeek(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 4)
	if _, err := checkpoint.Peek(e.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Peek of an empty directory: %v, want os.ErrNotExist", err)
	}
	m, err := e.mk.Make(ctx, "signd", false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Peek(e.dir)
	if err != nil || c.Size != 4 || !c.Time.Equal(m.Checkpoint.Time) || !bytes.Equal(c.Hash, m.Checkpoint.Hash) {
		t.Fatalf("Peek = %+v, %v; want the checkpoint of 4 made at %v", c, err, m.Checkpoint.Time)
	}
	for name, text := range map[string]string{
		"no blank line": "origin\n4\n",
		"bad body":      "origin\nfour\nhash\n\n— origin sig\n",
	} {
		if err := os.WriteFile(filepath.Join(e.dir, checkpoint.LatestName), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := checkpoint.Peek(e.dir); !errors.Is(err, checkpoint.ErrMalformed) {
			t.Errorf("%s: Peek = %v, want ErrMalformed", name, err)
		}
	}
}

// TestChainLines: a checkpoint of several chains carries one extension
// line per chain, and its size and hash are what the lines add up to;
// every other combination is refused.
func TestChainLines(t *testing.T) {
	k, _ := edKey(t)
	chains := []store.AuditChainHead{{Chain: "", Size: 2, Head: hash(1)}, {Chain: "n1", Size: 5, Head: hash(2)}, {Chain: "n2", Size: 1, Head: hash(3)}}
	c := &checkpoint.Checkpoint{Origin: origin, Size: 8, Hash: store.AuditHeadsDigest(chains), Time: t0, Chains: chains}
	msg, err := checkpoint.Sign(c, k)
	if err != nil {
		t.Fatal(err)
	}
	b := base64.StdEncoding.EncodeToString
	wantBody := origin + "\n8\n" + b(c.Hash) + "\ntime 2026-11-27T21:00:00Z\n" +
		"chain audit 2 " + b(hash(1)) + "\nchain audit.n1 5 " + b(hash(2)) + "\nchain audit.n2 1 " + b(hash(3)) + "\n"
	if c.Body() != wantBody {
		t.Fatalf("body %q, want %q", c.Body(), wantBody)
	}
	got, err := checkpoint.Open(msg, k.Verifier, origin)
	if err != nil || got.Size != 8 || len(got.Chains) != 3 || got.Chains[1].Chain != "n1" || !bytes.Equal(got.Chains[2].Head, hash(3)) {
		t.Fatalf("Open = %+v, %v", got, err)
	}
	// sha256sum of the lines "<bucket> <size> <hex head>" is the hash.
	lines := fmt.Sprintf("audit 2 %x\naudit.n1 5 %x\naudit.n2 1 %x\n", hash(1), hash(2), hash(3))
	if sum := sha256.Sum256([]byte(lines)); !bytes.Equal(sum[:], c.Hash) {
		t.Fatalf("hash %x is not SHA-256 of %q", c.Hash, lines)
	}

	line := func(bucket string, size int, h []byte) string {
		return fmt.Sprintf("chain %s %d %s\n", bucket, size, b(h))
	}
	two := []store.AuditChainHead{{Chain: "n1", Size: 5, Head: hash(2)}, {Chain: "n2", Size: 1, Head: hash(3)}}
	head2 := b(store.AuditHeadsDigest(two))
	good := line("audit.n1", 5, hash(2)) + line("audit.n2", 1, hash(3))
	sign := func(text string) []byte {
		m, err := note.Sign(&note.Note{Text: text}, k.Signer)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if _, err := checkpoint.Open(sign(origin+"\n6\n"+head2+"\n"+good), k.Verifier, origin); err != nil {
		t.Fatalf("two chains: %v", err)
	}
	for name, text := range map[string]string{
		"size is not the sum":    origin + "\n7\n" + head2 + "\n" + good,
		"hash is not the digest": origin + "\n6\n" + b(hash(9)) + "\n" + good,
		"out of order":           origin + "\n6\n" + head2 + "\n" + line("audit.n2", 1, hash(3)) + line("audit.n1", 5, hash(2)),
		"twice":                  origin + "\n10\n" + head2 + "\n" + good + line("audit.n2", 4, hash(3)),
		"chain \"\" alone":       origin + "\n2\n" + b(store.AuditHeadsDigest(chains[:1])) + "\n" + line("audit", 2, hash(1)),
		"not a chain bucket":     origin + "\n5\n" + head2 + "\n" + line("users", 5, hash(2)),
		"bad chain name":         origin + "\n5\n" + head2 + "\n" + line("audit.N1", 5, hash(2)),
		"empty chain":            origin + "\n5\n" + head2 + "\n" + line("audit.n1", 0, hash(2)) + line("audit.n2", 5, hash(3)),
		"leading zero":           origin + "\n6\n" + head2 + "\n" + line("audit.n1", 5, hash(2)) + "chain audit.n2 01 " + b(hash(3)) + "\n",
		"short head":             origin + "\n6\n" + head2 + "\n" + line("audit.n1", 5, hash(2)) + line("audit.n2", 1, hash(3)[:31]),
		"four fields":            origin + "\n6\n" + head2 + "\n" + good + "chain audit.n3 1 " + b(hash(3)) + " x\n",
	} {
		if c, err := checkpoint.Open(sign(text), k.Verifier, origin); !errors.Is(err, checkpoint.ErrMalformed) {
			t.Errorf("%s: Open = %+v, %v; want ErrMalformed", name, c, err)
		}
	}
	// Sign refuses to sign what Open would refuse.
	bad := &checkpoint.Checkpoint{Origin: origin, Size: 9, Hash: c.Hash, Chains: chains}
	if _, err := checkpoint.Sign(bad, k); !errors.Is(err, checkpoint.ErrMalformed) {
		t.Errorf("Sign of a size that is not the chains' = %v", err)
	}
}

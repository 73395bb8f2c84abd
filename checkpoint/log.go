package checkpoint

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/signd/signd/store"
)

// Why a log does not extend a checkpoint.
var (
	// ErrTruncated: the log has fewer entries than the checkpoint covers:
	// its end was cut off (or an older backup restored).
	ErrTruncated = errors.New("the audit log is shorter than the checkpoint")
	// ErrRewritten: entry Size of the log is not the one the checkpoint
	// signed: entries up to it were changed (and the chain re-computed),
	// or this log is a fork of the one checkpointed.
	ErrRewritten = errors.New("the audit log differs from the checkpoint")
	// ErrNoKey: the token holds no audit key (signd audit key create).
	ErrNoKey = errors.New("no audit key")
	// ErrEmpty: the audit log has no entry to checkpoint.
	ErrEmpty = errors.New("the audit log is empty: nothing to checkpoint")
)

// Report is what Verify found.
type Report struct {
	Checkpoint *Checkpoint
	// Entries and Head: how many entries of the log verify, every chain
	// from its first entry, and the log's head (store.AuditLogHead: for
	// a log of chain "" alone, the digest of the last of them).
	Entries uint64
	Head    []byte
	// BrokenChain, BrokenAt and Reason name the first entry at which a
	// chain does not hold (BrokenAt 0 with a Reason: the chain as a
	// whole, not both registered and stored); Reason "": every chain holds
	// to its end.
	BrokenChain string
	BrokenAt    uint64
	Reason      string
	// Extends: for every chain the checkpoint covers, entries 1..size are
	// in the log and entry size's digest is the checkpoint's head of that
	// chain (for a checkpoint of chain "" alone: entries 1..Size and its
	// Hash). Problem says why not (ErrTruncated or ErrRewritten, with
	// detail).
	Extends bool
	Problem error
}

// heads are the chains c covers: Chains, or chain "" of Size and Hash.
func (c *Checkpoint) heads() []store.AuditChainHead {
	if c.Chains != nil {
		return c.Chains
	}
	if c.Size == 0 {
		return nil
	}
	return []store.AuditChainHead{{Chain: "", Size: c.Size, Head: c.Hash}}
}

// ofChain is " of chain N" for a node's chain, "" for chain "": the
// messages of a log of chain "" alone read as they always have.
func ofChain(chain string) string {
	if chain == "" {
		return ""
	}
	return " of chain " + chain
}

// chainNames is the chains of the log and those of covered, "" first,
// then by name, each once.
func chainNames(infos []store.AuditChainInfo, covered []store.AuditChainHead) []store.AuditChainInfo {
	seen := map[string]bool{}
	var out []store.AuditChainInfo
	for _, c := range infos {
		seen[c.Name] = true
		out = append(out, c)
	}
	for _, h := range covered {
		if !seen[h.Chain] {
			seen[h.Chain] = true
			// Gone with its registry entry: neither registered nor stored.
			out = append(out, store.AuditChainInfo{Name: h.Chain})
		}
	}
	slices.SortFunc(out, func(a, b store.AuditChainInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Verify walks every chain of the audit log in tx from its first entry
// (store.AuditVerifier) and checks that it extends c: every chain c
// covers has at least the entries c says, and the digest of the last of
// them is the head c signed (for a checkpoint of chain "" alone: entry
// c.Size has digest c.Hash). Because every digest covers the one before
// it, that one comparison per chain proves that its entries up to there
// are those the checkpoint signed, and a chain that holds after it proves
// that the rest were appended to them; a chain cut short, or deleted,
// does not extend it. The consistency of two checkpoints is checked the
// same way: by walking the chains, not by a Merkle consistency proof.
// Errors are the store's (and ErrMalformed for a checkpoint of size 0,
// which Open refuses); what the log is found to be is in the Report.
func Verify(tx store.AuditTx, c *Checkpoint) (*Report, error) {
	if c.Size == 0 {
		return nil, fmt.Errorf("%w: size 0: a checkpoint of the empty log proves nothing", ErrMalformed)
	}
	r := &Report{Checkpoint: c}
	covered := c.heads()
	want := map[string]store.AuditChainHead{}
	for _, h := range covered {
		want[h.Chain] = h
	}
	infos, err := tx.AuditChains()
	if err != nil {
		return nil, err
	}
	var heads []store.AuditChainHead
	at := map[string][]byte{}                        // digest of each covered chain's last covered entry, as the chain holds it
	brokenAt := map[string]*store.AuditBrokenError{} // where each chain breaks
	for _, info := range chainNames(infos, covered) {
		v := store.ResumeAuditChainVerifier(info.Name, 0, nil)
		w := want[info.Name]
		err := tx.AuditChainRecords(info.Name, 1, func(seq uint64, raw []byte) error {
			e, err := v.Check(seq, raw)
			if err != nil {
				return err
			}
			if seq == w.Size {
				at[info.Name] = e.Digest
			}
			return nil
		})
		heads = append(heads, store.AuditChainHead{Chain: info.Name, Size: v.Count(), Head: v.Head()})
		var be *store.AuditBrokenError
		switch {
		case err == nil:
			err = store.CheckAuditRegistry(info, v.Count())
			if _, gone := want[info.Name]; gone && !info.Registered && !info.Stored {
				err = nil // reported below: the log does not extend the checkpoint
			}
		case !errors.As(err, &be):
			return nil, err
		}
		if errors.As(err, &be) {
			brokenAt[info.Name] = be
			if r.Reason == "" {
				r.BrokenChain, r.BrokenAt, r.Reason = be.Chain, be.Seq, be.Reason
			}
		}
	}
	r.Entries, r.Head = store.AuditLogHead(heads)
	r.Extends = true
	for _, h := range covered {
		got, ok := at[h.Chain]
		var problem error
		switch b, broken := brokenAt[h.Chain]; {
		case ok && bytes.Equal(got, h.Head):
			continue
		case ok:
			problem = fmt.Errorf("%w: entry %d%s's digest is %s, the checkpoint signed %s: entries up to %d were changed and the chain computed again, or this log is a fork of the one checkpointed",
				ErrRewritten, h.Size, ofChain(h.Chain), b64(got), b64(h.Head), h.Size)
		case broken && b.Seq != 0 && b.Seq <= h.Size:
			problem = fmt.Errorf("%w: the chain%s breaks at entry %d (%s), before entry %d the checkpoint covers", ErrRewritten, ofChain(h.Chain), b.Seq, b.Reason, h.Size)
		default:
			var n uint64
			for _, x := range heads {
				if x.Chain == h.Chain {
					n = x.Size
				}
			}
			problem = fmt.Errorf("%w: the log%s has %d entries, the checkpoint covers %d: its end was cut off, or an older copy restored", ErrTruncated, ofChain(h.Chain), n, h.Size)
		}
		r.Extends = false
		if r.Problem == nil {
			r.Problem = problem
		}
	}
	return r, nil
}

func b64(d []byte) string { return base64.StdEncoding.EncodeToString(d) }

// Maker signs checkpoints of the audit log in Store and writes them to
// Dir. It is safe for concurrent use; checkpoints are made one at a
// time. The daemon keeps one for its timer and its admin socket, so that
// both continue from the last checkpoint it made; a CLI process starts
// from the latest one in Dir.
type Maker struct {
	Store store.Store
	// Key returns the audit key under the name name (the origin a
	// checkpoint is signed as); ErrNoKey when the token has none.
	Key    func(ctx context.Context, name string) (*Key, error)
	Origin string
	Dir    string
	Now    func() time.Time // nil = time.Now
	Logger *slog.Logger     // nil = discard

	mu       sync.Mutex
	last     *Checkpoint // nil until loaded from Dir
	lastNote []byte
}

// Made is one checkpoint Make returns.
type Made struct {
	Checkpoint *Checkpoint
	Note       []byte // the signed note, as written
	Path       string // its history file in Dir
	// Unchanged: nothing was added since the latest checkpoint (or, for a
	// timed one, nothing but that checkpoint's own audit entry): no new
	// one was signed; Checkpoint and Note are the latest's.
	Unchanged bool
}

func (m *Maker) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Maker) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Make signs a checkpoint of every entry of the audit log, entries 1..N,
// writes it to Dir (and the verifier key, WriteKey) and appends an audit_checkpoint entry (entry N+1 or
// later: it is covered by the next checkpoint) naming actor. timed marks
// the daemon's own checkpoints, which are skipped when the log holds
// nothing new but the previous checkpoint's entry.
//
// It never signs a checkpoint that is inconsistent with the latest one in
// Dir (C2SP tlog-checkpoint: "A log MUST NOT sign any checkpoint which is
// inconsistent with any checkpoint it previously signed"): when the log
// no longer extends it (ErrTruncated, ErrRewritten) or the chain after it
// does not hold, Make refuses, logs an error and records the refusal in
// the audit log. Only the entries since the latest checkpoint are read.
func (m *Maker) Make(ctx context.Context, actor string, timed bool) (*Made, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key, err := m.Key(ctx, m.Origin)
	if err != nil {
		return nil, err
	}
	if m.last == nil {
		if err := m.loadLatest(ctx); err != nil {
			return nil, err
		}
	}
	last := m.last
	var heads []store.AuditChainHead
	var added uint64
	var lastKind store.AuditKind
	err = m.Store.View(ctx, func(tx store.Tx) error {
		var herr error
		heads, added, lastKind, herr = extend(tx, last)
		return herr
	})
	if errors.Is(err, ErrTruncated) || errors.Is(err, ErrRewritten) {
		m.refuse(ctx, actor, err)
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	n, head := store.AuditLogHead(heads)
	switch {
	case n == 0:
		return nil, ErrEmpty
	case added == 0, timed && added == 1 && lastKind == store.AuditCheckpoint:
		return &Made{Checkpoint: last, Note: m.lastNote, Path: m.historyPath(last.Size), Unchanged: true}, nil
	}
	c := &Checkpoint{Origin: m.Origin, Size: n, Hash: head, Time: m.now().UTC().Truncate(time.Second), Chains: covered(heads)}
	signed, err := Sign(c, key)
	if err != nil {
		return nil, err
	}
	path, err := Write(m.Dir, n, signed)
	if err != nil {
		if errors.Is(err, ErrConflict) {
			m.refuse(ctx, actor, err)
		}
		return nil, err
	}
	if err := WriteKey(m.Dir, key.VerifierKey); err != nil {
		return nil, err
	}
	m.last, m.lastNote = c, signed
	err = m.Store.Update(ctx, func(tx store.Tx) error {
		return tx.AppendAudit(&store.AuditEntry{Time: m.now(), Kind: store.AuditCheckpoint, Actor: actor,
			Target: "audit-log:" + m.Origin, Outcome: store.AuditOK,
			Fields: map[string]string{"size": strconv.FormatUint(n, 10), "hash": b64(head), "key": key.VerifierKey, "file": path}})
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint of %d entries written to %s, but not recorded in the audit log: %w", n, path, err)
	}
	m.logger().InfoContext(ctx, "audit checkpoint signed", "size", n, "hash", b64(head), "file", path, "actor", actor)
	return &Made{Checkpoint: c, Note: signed, Path: path}, nil
}

func (m *Maker) historyPath(size uint64) string {
	if size == 0 {
		return ""
	}
	return filepath.Join(m.Dir, HistoryName(size))
}

// loadLatest sets m.last from Dir's latest checkpoint, verified with the
// audit key (under the checkpoint's own origin: audit.checkpoint_origin
// may have changed since), or to the empty log when Dir has none.
func (m *Maker) loadLatest(ctx context.Context) error {
	msg, err := ReadLatest(m.Dir)
	if errors.Is(err, os.ErrNotExist) {
		m.last = &Checkpoint{Origin: m.Origin}
		return nil
	}
	if err != nil {
		return fmt.Errorf("the latest checkpoint: %w", err)
	}
	key, err := m.Key(ctx, Origin(msg))
	if err == nil {
		m.last, err = Open(msg, key.Verifier, "")
	}
	if err != nil {
		return fmt.Errorf("the latest checkpoint in %s does not verify with the audit key (%w); a checkpoint must extend it, so none is signed: move it aside if the audit key was replaced", m.Dir, err)
	}
	m.lastNote = msg
	return nil
}

// refuse records that a checkpoint was refused, in the log and the
// audit log (best effort: the log may be what is broken).
func (m *Maker) refuse(ctx context.Context, actor string, why error) {
	m.logger().ErrorContext(ctx, "audit checkpoint refused: the audit log does not extend the latest checkpoint", "error", why, "actor", actor)
	err := m.Store.Update(ctx, func(tx store.Tx) error {
		return tx.AppendAudit(&store.AuditEntry{Time: m.now(), Kind: store.AuditCheckpoint, Actor: actor,
			Target: "audit-log:" + m.Origin, Outcome: store.AuditRefused, Reason: why.Error()})
	})
	if err != nil {
		m.logger().ErrorContext(ctx, "audit checkpoint refusal not recorded", "error", err)
	}
}

// covered is the Chains of a checkpoint of heads: the chains with
// entries, nil when that is chain "" alone (the plain form).
func covered(heads []store.AuditChainHead) []store.AuditChainHead {
	var out []store.AuditChainHead
	for _, h := range heads {
		if h.Size > 0 {
			out = append(out, h)
		}
	}
	if len(out) == 1 && out[0].Chain == "" {
		return nil
	}
	return out
}

// extend reads, chain by chain, the entries after the checkpoint last
// (each chain's last covered entry must still have the digest last
// signed) and returns every chain's size and head, how many entries were
// added since last and the kind of the last of them. Each new entry is
// checked as a link of its chain from last.
func extend(tx store.AuditTx, last *Checkpoint) (heads []store.AuditChainHead, added uint64, kind store.AuditKind, err error) {
	lastHeads := last.heads()
	infos, err := tx.AuditChains()
	if err != nil {
		return nil, 0, "", err
	}
	from := map[string]store.AuditChainHead{}
	for _, h := range lastHeads {
		from[h.Chain] = h
	}
	for _, info := range chainNames(infos, lastHeads) {
		lh := from[info.Name]
		if lh.Size > 0 {
			found := false
			err = tx.AuditChainRecords(info.Name, lh.Size, func(seq uint64, raw []byte) error {
				found = seq == lh.Size
				if !found {
					return nil
				}
				e, derr := store.DecodeAuditEntry(raw)
				if derr != nil {
					return fmt.Errorf("%w: entry %d%s does not decode: %v", ErrRewritten, seq, ofChain(info.Name), derr)
				}
				if !bytes.Equal(e.Digest, lh.Head) {
					return fmt.Errorf("%w: entry %d%s's digest is %s, the latest checkpoint signed %s", ErrRewritten, seq, ofChain(info.Name), b64(e.Digest), b64(lh.Head))
				}
				return errStop
			})
			if err != nil && !errors.Is(err, errStop) {
				return nil, 0, "", err
			}
			if !found {
				return nil, 0, "", fmt.Errorf("%w: entry %d%s, the last the latest checkpoint covers, is gone", ErrTruncated, lh.Size, ofChain(info.Name))
			}
		}
		v := store.ResumeAuditChainVerifier(info.Name, lh.Size, lh.Head)
		err = tx.AuditChainRecords(info.Name, lh.Size+1, func(seq uint64, raw []byte) error {
			e, err := v.Check(seq, raw)
			if err != nil {
				return err
			}
			added++
			kind = e.Kind
			return nil
		})
		if err == nil {
			err = store.CheckAuditRegistry(info, v.Count())
		}
		var be *store.AuditBrokenError
		if errors.As(err, &be) {
			return nil, 0, "", fmt.Errorf("%w: after the latest checkpoint (%d entries), %v", ErrRewritten, last.Size, be)
		}
		if err != nil {
			return nil, 0, "", err
		}
		heads = append(heads, store.AuditChainHead{Chain: info.Name, Size: v.Count(), Head: v.Head()})
	}
	return heads, added, kind, nil
}

var errStop = errors.New("stop")

// Run makes a timed checkpoint (actor "signd") at every tick until ctx
// ends; failures are logged.
func (m *Maker) Run(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		if _, err := m.Make(ctx, "signd", true); err != nil && ctx.Err() == nil {
			level := slog.LevelError
			if errors.Is(err, ErrNoKey) {
				level = slog.LevelWarn
			}
			m.logger().Log(ctx, level, "audit checkpoint not made", "error", err)
		}
	}
}

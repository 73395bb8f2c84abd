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
	"strconv"
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
	// Entries and Head: how many entries of the log verify as a chain
	// from the first, and the digest of the last of them.
	Entries uint64
	Head    []byte
	// BrokenAt and Reason name the first entry at which the chain does
	// not hold (0: it holds to the end).
	BrokenAt uint64
	Reason   string
	// Extends: entries 1..Checkpoint.Size are in the log and entry Size's
	// digest is the checkpoint's hash. Problem says why not (ErrTruncated
	// or ErrRewritten, with detail).
	Extends bool
	Problem error
}

// Verify walks the whole audit log in tx as a hash chain from its first
// entry (store.AuditVerifier) and checks that it extends c: it has at
// least c.Size entries and the digest of entry c.Size is c.Hash. Because
// every digest covers the one before it, that one comparison proves that
// entries 1..c.Size are those the checkpoint signed, and a chain that
// holds after it proves that the rest were appended to them. The
// consistency of two checkpoints is checked the same way: by walking the
// chain, not by a Merkle consistency proof. Errors are the store's (and
// ErrMalformed for a checkpoint of size 0, which Open refuses); what the
// log is found to be is in the Report.
func Verify(tx store.AuditTx, c *Checkpoint) (*Report, error) {
	if c.Size == 0 {
		return nil, fmt.Errorf("%w: size 0: a checkpoint of the empty log proves nothing", ErrMalformed)
	}
	r := &Report{Checkpoint: c}
	var v store.AuditVerifier
	var at []byte // digest of entry c.Size as the chain holds it
	err := tx.AuditRecords(1, func(seq uint64, raw []byte) error {
		e, err := v.Check(seq, raw)
		if err != nil {
			return err
		}
		if seq == c.Size {
			at = e.Digest
		}
		return nil
	})
	r.Entries, r.Head = v.Count(), v.Head()
	var be *store.AuditBrokenError
	switch {
	case errors.As(err, &be):
		r.BrokenAt, r.Reason = be.Seq, be.Reason
	case err != nil:
		return nil, err
	}
	switch {
	case at != nil && bytes.Equal(at, c.Hash):
		r.Extends = true
	case at != nil:
		r.Problem = fmt.Errorf("%w: entry %d's digest is %s, the checkpoint signed %s: entries up to %d were changed and the chain computed again, or this log is a fork of the one checkpointed",
			ErrRewritten, c.Size, b64(at), b64(c.Hash), c.Size)
	case r.BrokenAt != 0 && r.BrokenAt <= c.Size:
		r.Problem = fmt.Errorf("%w: the chain breaks at entry %d (%s), before entry %d the checkpoint covers", ErrRewritten, r.BrokenAt, r.Reason, c.Size)
	default:
		r.Problem = fmt.Errorf("%w: the log has %d entries, the checkpoint covers %d: its end was cut off, or an older copy restored", ErrTruncated, r.Entries, c.Size)
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
	var n uint64
	var head []byte
	var lastKind store.AuditKind
	err = m.Store.View(ctx, func(tx store.Tx) error {
		var herr error
		n, head, lastKind, herr = extend(tx, last)
		return herr
	})
	if errors.Is(err, ErrTruncated) || errors.Is(err, ErrRewritten) {
		m.refuse(ctx, actor, err)
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	switch {
	case n == 0:
		return nil, ErrEmpty
	case n == last.Size, timed && n == last.Size+1 && lastKind == store.AuditCheckpoint:
		return &Made{Checkpoint: last, Note: m.lastNote, Path: m.historyPath(last.Size), Unchanged: true}, nil
	}
	c := &Checkpoint{Origin: m.Origin, Size: n, Hash: head, Time: m.now().UTC().Truncate(time.Second)}
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

// extend reads the entries after the checkpoint last (entry last.Size
// must still have last.Hash) and returns the number of entries, the last
// one's digest and kind. Each new entry is checked as a link of the
// chain from last.
func extend(tx store.AuditTx, last *Checkpoint) (n uint64, head []byte, kind store.AuditKind, err error) {
	if last.Size > 0 {
		found := false
		err = tx.AuditRecords(last.Size, func(seq uint64, raw []byte) error {
			found = seq == last.Size
			if !found {
				return nil
			}
			e, derr := store.DecodeAuditEntry(raw)
			if derr != nil {
				return fmt.Errorf("%w: entry %d does not decode: %v", ErrRewritten, seq, derr)
			}
			if !bytes.Equal(e.Digest, last.Hash) {
				return fmt.Errorf("%w: entry %d's digest is %s, the latest checkpoint signed %s", ErrRewritten, seq, b64(e.Digest), b64(last.Hash))
			}
			kind = e.Kind
			return errStop
		})
		if err != nil && !errors.Is(err, errStop) {
			return 0, nil, "", err
		}
		if !found {
			return 0, nil, "", fmt.Errorf("%w: entry %d, the last the latest checkpoint covers, is gone", ErrTruncated, last.Size)
		}
	}
	v := store.ResumeAuditVerifier(last.Size, last.Hash)
	err = tx.AuditRecords(last.Size+1, func(seq uint64, raw []byte) error {
		e, err := v.Check(seq, raw)
		if err != nil {
			return err
		}
		kind = e.Kind
		return nil
	})
	var be *store.AuditBrokenError
	if errors.As(err, &be) {
		return 0, nil, "", fmt.Errorf("%w: after the latest checkpoint (%d entries), %v", ErrRewritten, last.Size, be)
	}
	if err != nil {
		return 0, nil, "", err
	}
	return v.Count(), v.Head(), kind, nil
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

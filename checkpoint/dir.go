package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/signd/signd/internal/safepath"
)

// LatestName is the file of the checkpoint directory that holds the
// latest checkpoint; each one is also kept as HistoryName(size).
const LatestName = "checkpoint"

// HistoryName is the file that keeps the checkpoint of size entries:
// "checkpoint.<size>". It is written once and never replaced.
func HistoryName(size uint64) string { return LatestName + "." + strconv.FormatUint(size, 10) }

// KeyName is the file of the checkpoint directory that holds the audit
// key's verifier key, written with every checkpoint (WriteKey): what
// GET /audit/checkpoint.key serves, without asking the token.
const KeyName = "key"

// WriteKey stores the verifier key vkey, and a newline, as KeyName in dir,
// replacing what was there, through a temporary file renamed into place.
// dir must be one no other local user controls (safeDir).
func WriteKey(dir, vkey string) error {
	if err := safeDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(vkey + "\n")
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, KeyName))
	}
	if err != nil {
		return fmt.Errorf("write the verifier key: %w", err)
	}
	return nil
}

// ErrUnsafeDir: the checkpoint directory, or one above it, is one another
// local user can change (internal/safepath's DataDir). Its owner could swap it for a
// link between signd's checks and its renames, and have signd (root, for
// `signd audit checkpoint` with no daemon) replace a file named
// checkpoint or key, or create checkpoint.N, in any directory.
var ErrUnsafeDir = errors.New("unsafe checkpoint directory")

// safeDir refuses a checkpoint directory another local user controls,
// naming it and how to run the command instead.
func safeDir(dir string) error {
	err := safepath.DataDir(os.Geteuid()).Parents(dir)
	var se *safepath.Error
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &se):
		return fmt.Errorf("checkpoint directory: %w", err)
	case se.Writable:
		return fmt.Errorf("%w: %s: directory %s is writable by every local user (mode %#o, not sticky): anyone could put a link in its place (run: chmod o-w %s)",
			ErrUnsafeDir, dir, se.Path, se.Mode.Perm(), se.Path)
	}
	who, as := safepath.Owner(se.UID)
	return fmt.Errorf("%w: %s: directory %s is owned by %s, not by root or uid %d of this process: that user could put a link in its place; nothing was written (run this command %s)",
		ErrUnsafeDir, dir, se.Path, who, se.EUID, as)
}

// ErrConflict: the directory already holds another checkpoint of the
// same size. Two different checkpoints of one size are a fork: the log
// was rolled back (a restored backup) and grew again.
var ErrConflict = errors.New("another checkpoint of this size exists")

// Write stores note, the checkpoint of size entries, in dir (created
// 0750 when missing): as HistoryName(size), never replacing a different
// one (ErrConflict), then as LatestName. Each file is written to a
// temporary file, synced, and linked or renamed into place, and the
// directory synced, so a reader (GET /audit/checkpoint, a copy job) sees
// a whole checkpoint or none. It returns the history file's path. dir
// must be one no other local user controls (safeDir).
func Write(dir string, size uint64, note []byte) (string, error) {
	if err := safeDir(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("checkpoint directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".checkpoint-*")
	if err != nil {
		return "", fmt.Errorf("checkpoint directory: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name) // after the link and the rename, a no-op
	_, err = tmp.Write(note)
	if err == nil {
		err = tmp.Chmod(0o644) // public: it is served at /audit/checkpoint
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write checkpoint: %w", err)
	}
	hist := filepath.Join(dir, HistoryName(size))
	if err := os.Link(name, hist); errors.Is(err, os.ErrExist) {
		old, rerr := readNote(hist)
		if rerr != nil {
			return "", fmt.Errorf("%w: %s exists and cannot be read: %v", ErrConflict, hist, rerr)
		}
		if !bytes.Equal(old, note) {
			return "", fmt.Errorf("%w: %s holds a different checkpoint of %d entries: the audit log was rolled back or forked since it was signed", ErrConflict, hist, size)
		}
	} else if err != nil {
		return "", fmt.Errorf("write checkpoint: %w", err)
	}
	if err := os.Rename(name, filepath.Join(dir, LatestName)); err != nil {
		return "", fmt.Errorf("write checkpoint: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return "", fmt.Errorf("write checkpoint: sync %s: %w", dir, err)
		}
	}
	return hist, nil
}

// ReadLatest returns the latest checkpoint note in dir; an error
// satisfying errors.Is(err, os.ErrNotExist) when there is none.
func ReadLatest(dir string) ([]byte, error) {
	return readNote(filepath.Join(dir, LatestName))
}

// readNote reads a checkpoint file of at most MaxNote bytes.
func readNote(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxNote+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxNote {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrMalformed, MaxNote)
	}
	return data, nil
}

// Peek returns the latest checkpoint in dir as written, WITHOUT checking
// its signature: for monitoring its age and size (the daemon's metrics),
// never for trusting its hash (Open checks the signature). An error
// satisfying errors.Is(err, os.ErrNotExist) when there is none.
func Peek(dir string) (*Checkpoint, error) {
	msg, err := ReadLatest(dir)
	if err != nil {
		return nil, err
	}
	text, _, ok := bytes.Cut(msg, []byte("\n\n"))
	if !ok {
		return nil, fmt.Errorf("%w: not a signed note (text, a blank line, signature lines)", ErrMalformed)
	}
	return ParseBody(string(text) + "\n")
}

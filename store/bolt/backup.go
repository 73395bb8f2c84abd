package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
)

// Backup writes a consistent snapshot of the store to w and returns its
// size: bbolt's Tx.WriteTo in one read transaction, so writers carry on
// meanwhile and the snapshot is the store as of one commit. The snapshot
// is itself a store file: point store.path at it to restore.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := db.view(func(btx *bbolt.Tx) (err error) {
		n, err = btx.WriteTo(w)
		return err
	})
	return n, err
}

// BackupResult describes a backup file SaveBackup wrote.
type BackupResult struct {
	File  string       `json:"file"`
	Bytes int64        `json:"bytes"`
	Check *CheckReport `json:"check"`
}

// SaveBackup writes the snapshot src produces to path: never over an
// existing file, mode 0600, and atomically — into a temporary file in the
// same directory, fsynced, checked as a store (CheckFile: a backup that
// would not restore is refused), then linked to path (which fails if path
// appeared meanwhile) and the directory fsynced. Nothing is left behind on
// failure.
func SaveBackup(ctx context.Context, path string, src func(io.Writer) error) (*BackupResult, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("backup %s: the file exists; refusing to overwrite it", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // after the link, or on failure
	fail := func(err error) (*BackupResult, error) {
		tmp.Close()
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	if err := tmp.Chmod(fileMode); err != nil {
		return fail(err)
	}
	if err := src(tmp); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	fi, err := tmp.Stat()
	if err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	rep, err := CheckFile(ctx, name, time.Second)
	if err != nil {
		return nil, fmt.Errorf("backup %s: checking the copy: %w", path, err)
	}
	if !rep.OK {
		return nil, fmt.Errorf("backup %s: the copy does not check: %s", path, rep.Problem)
	}
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("backup %s: the file exists; refusing to overwrite it", path)
		}
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	_ = os.Remove(name)
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	rep.File = path
	return &BackupResult{File: path, Bytes: fi.Size(), Check: rep}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

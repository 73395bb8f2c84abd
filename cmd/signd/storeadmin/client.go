package storeadmin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/daemonaudit"
	"github.com/signd/signd/store/bolt"
)

// Source is where `signd store check` and `backup` run: the store file
// (File) or the daemon (Socket).
type Source interface {
	Check(ctx context.Context) (*bolt.CheckReport, error)
	// SaveBackup writes a snapshot of the store to path (bolt.SaveBackup)
	// and has it recorded in the audit log (store_backup).
	SaveBackup(ctx context.Context, path string) (*bolt.BackupResult, error)
}

// File works on the file, which no daemon holds. Check opens it
// read-only; SaveBackup opens it for writing, to append its audit entry.
type File struct {
	Path    string
	Options bolt.Options
	By      admin.Principal // the operator running the command
	Now     func() time.Time
}

// Check judges the file (bolt.CheckFile).
func (f File) Check(ctx context.Context) (*bolt.CheckReport, error) {
	return bolt.CheckFile(ctx, f.Path, f.Options.Timeout)
}

// SaveBackup writes the snapshot and then appends its store_backup entry,
// naming the operator running the command (f.By) and the file.
// A backup whose entry cannot be written is removed: no backup leaves the
// store unrecorded.
func (f File) SaveBackup(ctx context.Context, path string) (*bolt.BackupResult, error) {
	opts := f.Options
	opts.ReadOnly = false
	db, err := bolt.Open(f.Path, opts)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	sum := sha256.New()
	res, err := bolt.SaveBackup(ctx, path, func(w io.Writer) error {
		sum.Reset()
		_, err := db.Backup(ctx, io.MultiWriter(w, sum))
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := daemonaudit.Append(ctx, db, backupEntry(f.By, path, res.Bytes, sum, nil, f.Now())); err != nil {
		if rerr := os.Remove(path); rerr != nil {
			return nil, fmt.Errorf("backup %s: recording it in the audit log: %w (and removing it: %v)", path, err, rerr)
		}
		return nil, fmt.Errorf("backup %s: recording it in the audit log: %w; the backup was removed", path, err)
	}
	return res, nil
}

// Socket asks the running daemon over its admin socket (Client:
// adminrpc.Remote.HTTPClient).
type Socket struct{ Client *http.Client }

// Check has the daemon judge its file.
func (s Socket) Check(ctx context.Context) (*bolt.CheckReport, error) {
	res, err := postAdmin(ctx, s.Client, "StoreCheck", struct{}{})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var rep bolt.CheckReport
	if err := json.NewDecoder(res.Body).Decode(&rep); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	return &rep, nil
}

// SaveBackup has the daemon stream the snapshot, which it records in its
// audit log with the socket peer as actor.
func (s Socket) SaveBackup(ctx context.Context, path string) (*bolt.BackupResult, error) {
	return bolt.SaveBackup(ctx, path, func(w io.Writer) error { return s.backup(ctx, w) })
}

func (s Socket) backup(ctx context.Context, w io.Writer) error {
	res, err := postAdmin(ctx, s.Client, "StoreBackup", struct{}{})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(w, res.Body); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	return nil
}

// postAdmin calls an admin socket method outside the admin.Service table
// (the store methods). A status other than 200 is an error carrying the
// daemon's message.
func postAdmin(ctx context.Context, client *http.Client, method string, body any) (*http.Response, error) {
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://signd/admin/v1/"+method, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return nil, fmt.Errorf("admin socket: %s: %s", res.Status, strings.TrimSpace(string(msg)))
	}
	return res, nil
}

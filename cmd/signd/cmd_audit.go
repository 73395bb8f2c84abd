package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/signd/signd/store"
)

// `signd audit verify` and `signd audit export` read the audit log where it
// is: through the daemon's admin socket while it runs (it holds the store's
// lock), else from the store file. Either way the daemon or the CLI walks
// the stored entries itself, so a verification never trusts a copy.

func (a *app) auditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Check and export the tamper-evident audit log"}
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check the whole hash chain; names the first broken entry and exits 1 when there is one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAudit(cmd, func(ctx context.Context, src auditSource) error {
				res, err := src.verify(ctx)
				if err != nil {
					return err
				}
				if a.jsonOut {
					if err := a.printJSON(res); err != nil {
						return err
					}
				} else if res.OK {
					fmt.Fprintf(a.stdout, "audit log intact: %d entries, head digest %s\n", res.Entries, res.Head)
				}
				if !res.OK {
					return fmt.Errorf("audit log broken at entry %d: %s (%d entries before it verify)", res.BrokenAt, res.Reason, res.Entries)
				}
				return nil
			})
		},
	}
	var since string
	export := &cobra.Command{
		Use:   "export [--since T]",
		Short: "Write the audit log as JSON lines (the stored entries, oldest first)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var from time.Time
			if since != "" {
				var err error
				if from, err = parseSince(since); err != nil {
					return err
				}
			}
			return a.withAudit(cmd, func(ctx context.Context, src auditSource) error {
				w := bufio.NewWriter(a.stdout)
				err := src.export(ctx, from, w)
				if ferr := w.Flush(); err == nil {
					err = ferr
				}
				return err
			})
		},
	}
	export.Flags().StringVar(&since, "since", "", "only entries at or after T (RFC 3339, e.g. 2026-01-02T15:04:05Z, or a date YYYY-MM-DD in UTC)")
	cmd.AddCommand(verify, export)
	return cmd
}

func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want RFC 3339 (2026-01-02T15:04:05Z) or a date (2026-01-02)", s)
}

// auditResult is the outcome of a verification, also the admin socket's
// answer.
type auditResult struct {
	OK       bool   `json:"ok"`
	Entries  uint64 `json:"entries"`             // entries verified
	Head     string `json:"head"`                // digest of the last verified entry, hex
	BrokenAt uint64 `json:"broken_at,omitempty"` // first broken entry
	Reason   string `json:"reason,omitempty"`
}

// auditSource is where the log is read: the store file or the daemon.
type auditSource interface {
	verify(ctx context.Context) (*auditResult, error)
	export(ctx context.Context, since time.Time, w io.Writer) error
}

func (a *app) withAudit(cmd *cobra.Command, fn func(context.Context, auditSource) error) error {
	cfg, remote, err := a.dialAdmin(cmd)
	if err != nil {
		return err
	}
	if remote != nil {
		return fn(cmd.Context(), &socketAudit{client: remote.HTTPClient()})
	}
	db, err := openStore(cfg, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	// Reading every entry of a file no daemon vouches for: judge every
	// page first, so that a damaged one is named instead of read.
	if err := db.CheckStructure(cmd.Context()); err != nil {
		return err
	}
	return fn(cmd.Context(), storeAudit{db})
}

// storeAudit reads a store directly.
type storeAudit struct{ s store.Store }

func (l storeAudit) verify(ctx context.Context) (*auditResult, error) {
	return verifyAuditLog(ctx, l.s)
}

func (l storeAudit) export(ctx context.Context, since time.Time, w io.Writer) error {
	return exportAuditLog(ctx, l.s, since, w)
}

// verifyAuditLog checks the chain in s. Whatever the stored bytes, it
// returns an error rather than panic.
func verifyAuditLog(ctx context.Context, s store.Store) (res *auditResult, err error) {
	defer recoverRead("audit verify", &err)
	res = &auditResult{}
	err = s.View(ctx, func(tx store.Tx) error {
		n, head, err := store.VerifyAudit(tx)
		res.Entries, res.Head = n, hex.EncodeToString(head)
		var be *store.AuditBrokenError
		if errors.As(err, &be) {
			res.BrokenAt, res.Reason = be.Seq, be.Reason
			return nil
		}
		res.OK = err == nil
		return err
	})
	return res, err
}

// exportAuditLog writes the entries at or after since as JSON lines, in
// their stored (canonical) encoding. An entry that does not decode stops
// the export with an error naming it.
func exportAuditLog(ctx context.Context, s store.Store, since time.Time, w io.Writer) (err error) {
	defer recoverRead("audit export", &err)
	return s.View(ctx, func(tx store.Tx) error {
		return tx.AuditRecords(1, func(seq uint64, raw []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := store.DecodeAuditEntry(raw)
			if err != nil {
				return &store.AuditBrokenError{Seq: seq, Reason: err.Error()}
			}
			if e.Time.Before(since) {
				return nil
			}
			if _, err := w.Write(raw); err != nil {
				return err
			}
			_, err = w.Write([]byte{'\n'})
			return err
		})
	})
}

// recoverRead turns a panic while reading the store into an error wrapping
// store.ErrCorrupt: the last line of defence of the offline readers, after
// the structure check and the store's own fault handling.
func recoverRead(what string, err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%s: %w: reading the store panicked: %v (run `signd store check`)", what, store.ErrCorrupt, v)
	}
}

// socketAudit asks the running daemon over its admin socket.
type socketAudit struct{ client *http.Client }

func (s *socketAudit) post(ctx context.Context, method string, body any) (*http.Response, error) {
	return postAdmin(ctx, s.client, method, body)
}

// postAdmin calls an admin socket method outside the admin.Service table
// (the audit and store methods, whose answers may be streams). A status
// other than 200 is an error carrying the daemon's message.
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

func (s *socketAudit) verify(ctx context.Context) (*auditResult, error) {
	res, err := s.post(ctx, "AuditVerify", struct{}{})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out auditResult
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	return &out, nil
}

// exportTrailer ends an export stream that failed; entries start with
// {"seq": and never look like it.
type exportTrailer struct {
	Error string `json:"error"`
}

func (s *socketAudit) export(ctx context.Context, since time.Time, w io.Writer) error {
	res, err := s.post(ctx, "AuditExport", struct {
		Since time.Time `json:"since"`
	}{since})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"error":`)) {
			var t exportTrailer
			_ = json.Unmarshal(line, &t)
			return errors.New(t.Error)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	return nil
}

// mountAuditAdmin adds the audit methods to the daemon's admin socket.
func mountAuditAdmin(e *echo.Echo, s store.Store, logger *slog.Logger) {
	e.POST("/admin/v1/AuditVerify", func(c echo.Context) error {
		res, err := verifyAuditLog(c.Request().Context(), s)
		if err != nil {
			logger.Error("audit verify failed", "err", err)
			return c.JSON(http.StatusInternalServerError, map[string]string{"kind": "internal", "message": "audit verify: internal error (see the signd log)"})
		}
		return c.JSON(http.StatusOK, res)
	})
	e.POST("/admin/v1/AuditExport", func(c echo.Context) error {
		var req struct {
			Since time.Time `json:"since"`
		}
		if err := json.NewDecoder(io.LimitReader(c.Request().Body, 4096)).Decode(&req); err != nil {
			return c.JSON(http.StatusBadRequest, map[string]string{"kind": "invalid", "message": "malformed audit export request"})
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
		c.Response().WriteHeader(http.StatusOK)
		if err := exportAuditLog(c.Request().Context(), s, req.Since, c.Response()); err != nil {
			logger.Warn("audit export stopped", "err", err)
			line, _ := json.Marshal(exportTrailer{Error: err.Error()})
			_, _ = c.Response().Write(append(line, '\n'))
		}
		return nil
	})
}

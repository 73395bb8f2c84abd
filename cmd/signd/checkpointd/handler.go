package checkpointd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/signd/signd/checkpoint"
)

// Handler serves the latest checkpoint of Dir to witnesses at
// GET /audit/checkpoint (text/plain, the signed note as written) and the
// verifier key at GET /audit/checkpoint.key (Dir's copy, written with
// each checkpoint and at the key's creation: a public request never asks
// the token anything): 404 while there is none, 503 when it cannot be
// read now.
type Handler struct {
	Dir    string
	Logger *slog.Logger
}

// Mount registers the two routes on g.
func (h Handler) Mount(g *echo.Group) error {
	if h.Dir == "" {
		return errors.New("checkpoint handler without a directory")
	}
	g.GET("/audit/checkpoint", func(c echo.Context) error {
		return h.serveFile(c, checkpoint.LatestName, "no audit checkpoint has been signed yet", "the audit checkpoint cannot be read now")
	})
	g.GET("/audit/checkpoint.key", func(c echo.Context) error {
		return h.serveFile(c, checkpoint.KeyName, "no audit key has been created yet", "the audit key cannot be read now")
	})
	return nil
}

// textError answers msg as text, never cached.
func textError(c echo.Context, status int, msg string) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.String(status, msg+"\n")
}

// serveFile answers the file name of Dir as text/plain with an ETag and
// Last-Modified (a witness's conditional GET of an unchanged one gets
// 304), missing when there is none (404), unreadable when it cannot be
// read or is larger than a checkpoint may be (503).
func (h Handler) serveFile(c echo.Context, name, missing, unreadable string) error {
	path := filepath.Join(h.Dir, name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return textError(c, http.StatusNotFound, missing)
	}
	if err != nil {
		h.Logger.Error("audit checkpoint file unreadable", "file", path, "err", err)
		return textError(c, http.StatusServiceUnavailable, unreadable)
	}
	defer f.Close()
	st, err := f.Stat()
	var data []byte
	if err == nil {
		data, err = io.ReadAll(io.LimitReader(f, checkpoint.MaxNote+1))
	}
	if err == nil && len(data) > checkpoint.MaxNote {
		err = fmt.Errorf("larger than %d bytes", checkpoint.MaxNote)
	}
	if err != nil {
		h.Logger.Error("audit checkpoint file unreadable", "file", path, "err", err)
		return textError(c, http.StatusServiceUnavailable, unreadable)
	}
	sum := sha256.Sum256(data)
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
	// Witnesses poll: each asks again, and a 304 answers an unchanged one.
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	http.ServeContent(w, c.Request(), "", st.ModTime(), bytes.NewReader(data))
	return nil
}

// Every has mk sign a checkpoint every interval (or at each of ticks,
// tests) until the returned stop is called.
func Every(mk *checkpoint.Maker, every time.Duration, ticks <-chan time.Time) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ticker := time.NewTicker(every)
	if ticks == nil {
		ticks = ticker.C
	}
	done := make(chan struct{})
	go func() { defer close(done); mk.Run(ctx, ticks) }()
	return func() { cancel(); ticker.Stop(); <-done }
}

package etcd_test

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"go.uber.org/zap"

	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/store/etcd"
)

// The etcd client's zap entries become slog records: the daemon's JSON
// shape, slog's level names, zap's fields as attributes, entries below the
// slog handler's level dropped.
func TestZapThroughSlog(t *testing.T) {
	var logs bytes.Buffer
	l := etcd.ZapLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l = l.With(zap.String("endpoint", "https://etcd-1:2379"))
	l.Debug("dropped: below the handler's level")
	l.Info("retrying of unary invoker")
	l.Warn("required revision is a future revision", zap.Int64("revision", 42), zap.Error(errors.New("etcdserver: mvcc: required revision is a future revision")))
	l.Error("lost the leader", zap.Strings("members", []string{"a", "b"}))
	l.DPanic("inconsistent state")
	if ce := l.Check(zap.DebugLevel, "not checked out"); ce != nil {
		t.Error("a debug entry passes Check below the handler's level")
	}

	lines := logtest.Records(t, logs.String())
	want := []struct{ level, msg string }{
		{"INFO", "retrying of unary invoker"},
		{"WARN", "required revision is a future revision"},
		{"ERROR", "lost the leader"},
		{"ERROR", "inconsistent state"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), logs.String())
	}
	for i, w := range want {
		l := lines[i]
		if l["level"] != w.level || l["msg"] != w.msg || l["logger"] != "etcd-client" || l["endpoint"] != "https://etcd-1:2379" {
			t.Errorf("line %d: %v, want %s %q from etcd-client with the endpoint", i, l, w.level, w.msg)
		}
		for _, zapKey := range []string{"L", "M", "T", "ts", "caller"} {
			if _, ok := l[zapKey]; ok {
				t.Errorf("line %d has zap's own key %q: %v", i, zapKey, l)
			}
		}
	}
	if lines[1]["revision"] != float64(42) || lines[1]["error"] != "etcdserver: mvcc: required revision is a future revision" {
		t.Errorf("warning's fields: %v", lines[1])
	}
	if m, _ := lines[2]["members"].([]any); len(m) != 2 || m[0] != "a" {
		t.Errorf("error's fields: %v", lines[2])
	}
}

// Open gives the client a logger writing through Options.Logger.
func TestOpenClientLogsThroughSlog(t *testing.T) {
	var logs bytes.Buffer
	db := open(t, etcd.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	db.ClientLogger().Warn("required revision is a future revision", zap.Int64("revision", 7))
	var found bool
	for _, l := range logtest.Records(t, logs.String()) {
		if l["msg"] == "required revision is a future revision" && l["level"] == "WARN" && l["logger"] == "etcd-client" && l["revision"] == float64(7) {
			found = true
		}
	}
	if !found {
		t.Errorf("the client's warning is not in the log:\n%s", logs.String())
	}
}

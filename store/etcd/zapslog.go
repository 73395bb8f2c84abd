package etcd

import (
	"context"
	"log/slog"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger is a zap.Logger for the etcd client that writes through l:
// its warnings ("required revision is a future revision", retries,
// endpoint changes) land in the daemon's log in the daemon's format, at
// the mapped level (levelOf), marked "logger":"etcd-client". A nil l
// gives a logger that writes nothing.
func zapLogger(l *slog.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(slogCore{l: l.With("logger", "etcd-client")})
}

// slogCore is a zapcore.Core that forwards each entry to a slog.Logger,
// its fields (the core's own, from With, then the entry's) as attributes.
type slogCore struct {
	l     *slog.Logger
	attrs []slog.Attr
}

// levelOf maps zap's levels onto slog's; DPanic, Panic and Fatal are
// errors (zap itself panics or exits after writing them).
func levelOf(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func (c slogCore) Enabled(l zapcore.Level) bool {
	return c.l.Enabled(context.Background(), levelOf(l))
}

func (c slogCore) With(fields []zapcore.Field) zapcore.Core {
	return slogCore{l: c.l, attrs: append(slices.Clip(c.attrs), attrsOf(fields)...)}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	attrs := append(slices.Clip(c.attrs), attrsOf(fields)...)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("zap_logger", e.LoggerName))
	}
	c.l.LogAttrs(context.Background(), levelOf(e.Level), e.Message, attrs...)
	return nil
}

func (slogCore) Sync() error { return nil }

// attrsOf turns zap fields into slog attributes, in the fields' order,
// through zap's own encoder (errors become their text, durations and times
// their zap encoding).
func attrsOf(fields []zapcore.Field) []slog.Attr {
	attrs := make([]slog.Attr, 0, len(fields))
	for _, f := range fields {
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		keys := make([]string, 0, len(enc.Fields))
		for k := range enc.Fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			attrs = append(attrs, slog.Any(k, enc.Fields[k]))
		}
	}
	return attrs
}

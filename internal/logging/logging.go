// Package logging builds llmprobe's go-kit logger from the --log.level and
// --log.format flags and bridges it to log/slog for libraries that want a
// *slog.Logger (exporter-toolkit).
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// Levels and formats accepted by the flags.
var (
	Levels  = []string{"debug", "info", "warn", "error"}
	Formats = []string{"logfmt", "json"}
)

// Config holds the logging flags. The zero value logs info and above as logfmt.
type Config struct {
	Level  string
	Format string
}

// AddFlags registers --log.level and --log.format on app.
func AddFlags(app *kingpin.Application, c *Config) {
	app.Flag("log.level", "Only log messages with the given severity or above. One of: ["+join(Levels)+"]").
		Default("info").StringVar(&c.Level)
	app.Flag("log.format", "Output format of log messages. One of: ["+join(Formats)+"]").
		Default("logfmt").StringVar(&c.Format)
}

// Validate checks the flag values; the error names the flag.
func (c Config) Validate() error {
	if !slices.Contains(Levels, c.Level) {
		return fmt.Errorf("--log.level must be one of %s, got %q", join(Levels), c.Level)
	}
	if !slices.Contains(Formats, c.Format) {
		return fmt.Errorf("--log.format must be one of %s, got %q", join(Formats), c.Format)
	}
	return nil
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// New returns a go-kit logger writing to w with timestamps and caller, filtered
// by the configured level. The returned logger is safe for concurrent use.
func New(c Config, w io.Writer) log.Logger {
	w = log.NewSyncWriter(w)
	var l log.Logger
	if c.Format == "json" {
		l = log.NewJSONLogger(w)
	} else {
		l = log.NewLogfmtLogger(w)
	}
	var opt level.Option
	switch c.Level {
	case "debug":
		opt = level.AllowDebug()
	case "warn":
		opt = level.AllowWarn()
	case "error":
		opt = level.AllowError()
	default:
		opt = level.AllowInfo()
	}
	l = level.NewFilter(l, opt)
	return log.With(l, "ts", log.DefaultTimestampUTC, "caller", log.DefaultCaller)
}

// Slog returns a *slog.Logger whose records are forwarded to l with their
// level, message and attributes as key/value pairs.
func Slog(l log.Logger) *slog.Logger {
	return slog.New(&handler{logger: l})
}

type handler struct {
	logger log.Logger
	attrs  []any
	group  string
}

func (h *handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	kv := make([]any, 0, 4+len(h.attrs)+2*r.NumAttrs())
	kv = append(kv, "msg", r.Message)
	kv = append(kv, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		kv = append(kv, h.key(a.Key), a.Value.String())
		return true
	})
	var lv log.Logger
	switch {
	case r.Level >= slog.LevelError:
		lv = level.Error(h.logger)
	case r.Level >= slog.LevelWarn:
		lv = level.Warn(h.logger)
	case r.Level >= slog.LevelInfo:
		lv = level.Info(h.logger)
	default:
		lv = level.Debug(h.logger)
	}
	return lv.Log(kv...)
}

func (h *handler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &handler{logger: h.logger, group: h.group, attrs: append([]any{}, h.attrs...)}
	for _, a := range as {
		n.attrs = append(n.attrs, h.key(a.Key), a.Value.String())
	}
	return n
}

func (h *handler) WithGroup(name string) slog.Handler {
	g := name
	if h.group != "" {
		g = fmt.Sprintf("%s.%s", h.group, name)
	}
	return &handler{logger: h.logger, group: g, attrs: append([]any{}, h.attrs...)}
}

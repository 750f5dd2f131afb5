//go:build !no_kubernetes_sd

package discovery

import (
	"context"
	"log/slog"
	"sync/atomic"

	"k8s.io/klog/v2"
)

// Kubernetes discovery runs client-go, which logs through klog (a failed
// list or watch, a watch that ended early), by default to stderr in klog's
// own format. klog is given, once at program start (its logger may not be
// changed while others log), a logger that forwards to clientLog: the
// logger of the last Runner given a Slog logger (New), so that those lines
// come out in the daemon's format with component=discovery; before that,
// or after setClientLogger(nil), slog's default logger.
var clientLog atomic.Pointer[slog.Logger]

func init() {
	klog.SetSlogLogger(slog.New(forwardHandler{}))
	setClientLogger = func(l *slog.Logger) {
		if l != nil {
			l = l.With("mechanism", "kubernetes", "client", "client-go")
		}
		clientLog.Store(l)
	}
}

// forwardHandler hands each record to clientLog's handler, with the
// attributes and groups added to it, in their order.
type forwardHandler struct {
	ops []handlerOp
}

// handlerOp is a WithGroup (group set) or a WithAttrs.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

func (h forwardHandler) target() slog.Handler {
	l := clientLog.Load()
	if l == nil {
		l = slog.Default()
	}
	t := l.Handler()
	for _, op := range h.ops {
		if op.group != "" {
			t = t.WithGroup(op.group)
		} else {
			t = t.WithAttrs(op.attrs)
		}
	}
	return t
}

func (h forwardHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.target().Enabled(ctx, l)
}

func (h forwardHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.target().Handle(ctx, r)
}

func (h forwardHandler) with(op handlerOp) forwardHandler {
	return forwardHandler{ops: append(h.ops[:len(h.ops):len(h.ops)], op)}
}

func (h forwardHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: as})
}

func (h forwardHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}

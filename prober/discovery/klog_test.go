//go:build !no_kubernetes_sd

package discovery

import (
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestKlogForwarded: klog's lines reach the logger set last, with the
// attributes and groups in their order, and slog's default logger after
// setClientLogger(nil).
func TestKlogForwarded(t *testing.T) {
	var logs lockedBuffer
	setClientLogger(slog.New(slog.NewJSONHandler(&logs, nil)).With("component", "discovery"))
	t.Cleanup(func() { setClientLogger(nil) })
	h := forwardHandler{}.WithAttrs([]slog.Attr{slog.String("a", "1")}).WithGroup("g").WithAttrs([]slog.Attr{slog.String("b", "2")})
	slog.New(h).Error("direct")
	klog.ErrorS(nil, "through klog", "reflector", "pods")
	got := logs.String()
	for _, want := range []string{
		`"msg":"direct","component":"discovery","mechanism":"kubernetes","client":"client-go","a":"1","g":{"b":"2"}}`,
		`"msg":"through klog"`, `"reflector":"pods"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
}

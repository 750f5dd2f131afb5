package daemon

import (
	"log/slog"
	"net"
	"net/http"
	"strings"

	toolkit "github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/netutil"
)

// listenAndServe serves srv as exporter-toolkit's ListenAndServe does, with
// each TCP listener limited to maxConns connections at once (0: no limit):
// one more waits in the kernel's accept queue, holding no memory of the
// process, until a connection closes (as Prometheus' --web.max-connections).
// Systemd socket activation and vsock addresses are served by
// exporter-toolkit itself, without the limit.
func listenAndServe(srv *http.Server, flags *toolkit.FlagConfig, maxConns int, logger *slog.Logger) error {
	if maxConns <= 0 || (flags.WebSystemdSocket != nil && *flags.WebSystemdSocket) ||
		flags.WebListenAddresses == nil || len(*flags.WebListenAddresses) == 0 {
		return toolkit.ListenAndServe(srv, flags, logger)
	}
	listeners := make([]net.Listener, 0, len(*flags.WebListenAddresses))
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for _, address := range *flags.WebListenAddresses {
		if strings.HasPrefix(address, "vsock://") {
			return toolkit.ListenAndServe(srv, flags, logger)
		}
		l, err := net.Listen("tcp", address)
		if err != nil {
			return err
		}
		listeners = append(listeners, netutil.LimitListener(l, maxConns))
	}
	return toolkit.ServeMultiple(listeners, srv, flags, logger)
}

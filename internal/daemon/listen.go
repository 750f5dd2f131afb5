package daemon

import (
	"log/slog"
	"net"
	"net/http"
	"strings"

	toolkit "github.com/prometheus/exporter-toolkit/web"
)

// listenAndServe serves srv as exporter-toolkit's ListenAndServe does, with
// each TCP listener limited to maxConns connections at once (0: no limit)
// by a connLimiter: at the cap a new connection takes the place of the
// longest-idle one (one that sent nothing yet, or a keep-alive one between
// requests), so idle connections cannot keep a scrape out; it is closed at
// once only when every connection held is serving a request.
func listenAndServe(srv *http.Server, flags *toolkit.FlagConfig, maxConns int, logger *slog.Logger) error {
	var lim *connLimiter
	if maxConns > 0 {
		lim = newConnLimiter(maxConns)
	}
	return serveLimited(srv, flags, lim, logger)
}

// serveLimited is listenAndServe with the connLimiter given (nil: no
// limit), shared by every TCP listener; srv's ConnState is chained to it.
// Systemd socket activation and vsock addresses are served by
// exporter-toolkit itself, without the limit.
func serveLimited(srv *http.Server, flags *toolkit.FlagConfig, lim *connLimiter, logger *slog.Logger) error {
	if lim == nil || (flags.WebSystemdSocket != nil && *flags.WebSystemdSocket) ||
		flags.WebListenAddresses == nil || len(*flags.WebListenAddresses) == 0 {
		return toolkit.ListenAndServe(srv, flags, logger)
	}
	for _, address := range *flags.WebListenAddresses {
		if strings.HasPrefix(address, "vsock://") {
			return toolkit.ListenAndServe(srv, flags, logger)
		}
	}
	listeners := make([]net.Listener, 0, len(*flags.WebListenAddresses))
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for _, address := range *flags.WebListenAddresses {
		l, err := net.Listen("tcp", address)
		if err != nil {
			return err
		}
		listeners = append(listeners, limitListener{Listener: l, l: lim})
	}
	if prev := srv.ConnState; prev != nil {
		srv.ConnState = func(c net.Conn, s http.ConnState) { lim.ConnState(c, s); prev(c, s) }
	} else {
		srv.ConnState = lim.ConnState
	}
	return toolkit.ServeMultiple(listeners, srv, flags, logger)
}

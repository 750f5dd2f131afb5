//go:build unix

package testutil

import (
	"net"
	"syscall"
	"testing"
)

// RefusedAddr returns a loopback "127.0.0.1:port" where every connection is
// refused for the whole test: a TCP socket is bound to the port but never
// listens, so the kernel answers a connect with a reset, and no other
// process (another test's server) can take the port meanwhile, as it could
// after closing a listener. The socket is closed when the test ends.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("getsockname: %T", sa)
	}
	return (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: in.Port}).String()
}

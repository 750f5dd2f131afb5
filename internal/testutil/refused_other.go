//go:build !unix

package testutil

import (
	"net"
	"testing"
)

// RefusedAddr returns a loopback address where connections are refused: on
// this system, the address of a listener closed at once (another process
// could take the port before the test uses it).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

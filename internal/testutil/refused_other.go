//go:build !unix

package testutil

import "testing"

// RefusedAddr returns a loopback address where connections are refused: on
// this system, the address of a listener closed at once (FreeAddr; another
// process could take the port before the test uses it).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	return FreeAddr(t)
}

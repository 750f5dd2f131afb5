//go:build unix

package sweepd

import "syscall"

// writable reports whether this process may write into the directory p
// (access(2) with W_OK), without writing anything.
func writable(p string) error { return syscall.Access(p, 2 /* W_OK */) }

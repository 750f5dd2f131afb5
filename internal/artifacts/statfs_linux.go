//go:build linux

package artifacts

import (
	"fmt"
	"syscall"
)

// freeBytes returns the bytes available to unprivileged users on dir's file
// system.
func freeBytes(dir string) (free uint64, known bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false, fmt.Errorf("statfs: %w", err)
	}
	return st.Bavail * uint64(st.Bsize), true, nil
}

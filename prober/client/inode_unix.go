//go:build unix

package client

import (
	"os"
	"syscall"
)

// inode returns fi's inode number (0 when the file system gives none).
func inode(fi os.FileInfo) int64 {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(sys.Ino)
	}
	return 0
}

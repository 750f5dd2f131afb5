//go:build unix

package capfile

import (
	"io/fs"
	"syscall"
)

// Links is the number of hard links of the file fi describes (1 when the
// platform does not say).
func Links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

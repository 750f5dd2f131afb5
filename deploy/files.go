package deploy

import (
	"fmt"
	"os"
)

// maxFileBytes caps what the loaders read: deployment files are small.
const maxFileBytes = 4 << 20

func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileBytes)
	}
	return os.ReadFile(path)
}

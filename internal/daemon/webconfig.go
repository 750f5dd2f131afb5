package daemon

import (
	"errors"
	"fmt"

	toolkit "github.com/prometheus/exporter-toolkit/web"

	"github.com/llmprobe/llmprobe/prober/config"
)

// maxWebConfigBytes caps the --web.config.file read at startup.
const maxWebConfigBytes = 1 << 20

// validateWebConfig checks the web config file (--web.config.file) as
// exporter-toolkit will read it (TLS files, bcrypt hashes) before any probe
// starts; the file is first read with a cap, so that /dev/zero or a huge
// file is an error, not an unbounded read. An empty path is no file.
func validateWebConfig(path string) error {
	if path == "" {
		return nil
	}
	if _, err := config.ReadFile(path, maxWebConfigBytes); err != nil {
		var te *config.TooLargeError
		if errors.As(err, &te) {
			return fmt.Errorf("the file is larger than %v, the cap on a web config file", config.ByteSize(te.Limit))
		}
		return err
	}
	return toolkit.Validate(path)
}

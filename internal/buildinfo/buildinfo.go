// Package buildinfo completes prometheus/common/version (what `llmprobe
// version` prints and llmprobe_build_info exports) from the Go build
// information of binaries built without -ldflags (go run, go build, go
// install).
package buildinfo

import (
	"runtime/debug"

	"github.com/prometheus/common/version"
)

// DevVersion is the version reported by builds without -ldflags (go run, go
// build, go install): `make build` stamps the real one.
const DevVersion = "0.1.0-dev"

// Fill completes prometheus/common/version from the Go build information
// read returns (debug.ReadBuildInfo) where the binary was built without
// -ldflags, so that `llmprobe version` and llmprobe_build_info never show
// empty fields: values stamped with -ldflags win. Call it once, at init.
func Fill(read func() (*debug.BuildInfo, bool)) {
	bi, ok := read()
	if !ok {
		if version.Version == "" {
			version.Version = DevVersion
		}
		return
	}
	if version.Version == "" {
		version.Version = DevVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version.Version = v
		}
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if version.Revision == "" {
				version.Revision = s.Value
			}
		case "vcs.time":
			if version.BuildDate == "" {
				version.BuildDate = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && version.Revision != "" && len(version.Revision) == 40 {
		version.Revision += "-dirty"
	}
}

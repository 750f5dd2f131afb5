package main

import (
	"runtime/debug"

	"github.com/prometheus/common/version"
)

// devVersion is the version reported by builds without -ldflags (go run, go
// build, go install): `make build` stamps the real one.
const devVersion = "0.1.0-dev"

func init() { fillVersion(debug.ReadBuildInfo) }

// fillVersion completes prometheus/common/version from the Go build
// information when the binary was built without -ldflags, so that
// `llmprobe version` and llmprobe_build_info never show empty fields.
func fillVersion(read func() (*debug.BuildInfo, bool)) {
	bi, ok := read()
	if !ok {
		if version.Version == "" {
			version.Version = devVersion
		}
		return
	}
	if version.Version == "" {
		version.Version = devVersion
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

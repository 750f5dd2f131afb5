package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/prometheus/common/version"
)

func TestFillVersion(t *testing.T) {
	saved := []string{version.Version, version.Revision, version.BuildDate}
	defer func() { version.Version, version.Revision, version.BuildDate = saved[0], saved[1], saved[2] }()

	version.Version, version.Revision, version.BuildDate = "", "", ""
	Fill(func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789012345678901234567890123456789"},
			{Key: "vcs.time", Value: "2026-11-29T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}, true
	})
	if version.Version != DevVersion || version.Revision != "0123456789012345678901234567890123456789-dirty" || version.BuildDate != "2026-11-29T09:00:00Z" {
		t.Errorf("got %q %q %q", version.Version, version.Revision, version.BuildDate)
	}

	// Values stamped with -ldflags win.
	version.Version, version.Revision = "1.2.3", "abc"
	Fill(func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "zzz"}}}, true
	})
	if version.Version != "1.2.3" || version.Revision != "abc" {
		t.Errorf("ldflags values overwritten: %q %q", version.Version, version.Revision)
	}

	version.Version = ""
	Fill(func() (*debug.BuildInfo, bool) { return nil, false })
	if version.Version != DevVersion {
		t.Errorf("no build info: %q", version.Version)
	}
}

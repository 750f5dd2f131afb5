package fingerprint

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// Tool identifies the llmprobe build.
type Tool struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Branch    string `json:"branch"`
	BuildDate string `json:"build_date"`
	GoVersion string `json:"go_version"`
}

// ReadTool reads the build information set by -ldflags into
// prometheus/common/version; a missing revision falls back to the
// vcs.revision that the Go toolchain embeds (suffixed "-modified" for a dirty
// tree). Anything still unknown is NotRecorded.
func ReadTool() Tool {
	bi, ok := debug.ReadBuildInfo()
	return Tool{
		Version:   toolVersion(version.Version, bi, ok),
		Revision:  revision(version.Revision, bi, ok),
		Branch:    OrNotRecorded(version.Branch),
		BuildDate: OrNotRecorded(version.BuildDate),
		GoVersion: runtime.Version(),
	}
}

func toolVersion(set string, bi *debug.BuildInfo, ok bool) string {
	if set != "" {
		return set
	}
	if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return NotRecorded
}

func revision(set string, bi *debug.BuildInfo, ok bool) string {
	if set != "" {
		return set
	}
	if !ok {
		return NotRecorded
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return NotRecorded
	}
	if modified {
		rev += "-modified"
	}
	return rev
}

// Host describes the client machine that generated the load.
type Host struct {
	Hostname  string `json:"hostname"`
	CPUModel  string `json:"cpu_model"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// ReadHost reads the client host: hostname, CPU model from /proc/cpuinfo
// (NotRecorded where that file does not exist or names no model), logical
// cores, Go version, OS and architecture.
func ReadHost() Host {
	h, err := os.Hostname()
	if err != nil {
		h = ""
	}
	return Host{
		Hostname:  OrNotRecorded(h),
		CPUModel:  cpuModel("/proc/cpuinfo"),
		Cores:     runtime.NumCPU(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
	}
}

// cpuModel returns the first CPU model name in a /proc/cpuinfo-style file:
// "model name" (x86), else "Hardware", "cpu model", "Processor" or "cpu"
// (ARM, MIPS, POWER), else NotRecorded.
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return NotRecorded
	}
	defer f.Close()
	keys := []string{"model name", "hardware", "cpu model", "processor", "cpu"}
	found := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if _, seen := found[k]; !seen {
			found[k] = v
		}
	}
	for _, k := range keys {
		v, ok := found[k]
		if !ok {
			continue
		}
		// On x86 "processor" is the CPU index, not a model.
		if k == "processor" && strings.Trim(v, "0123456789") == "" {
			continue
		}
		return v
	}
	return NotRecorded
}

package main

import (
	"runtime/debug"

	"github.com/llmprobe/llmprobe/internal/buildinfo"
)

// The version of builds without -ldflags comes from the Go build
// information.
func init() { buildinfo.Fill(debug.ReadBuildInfo) }

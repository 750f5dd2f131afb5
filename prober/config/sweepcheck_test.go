package config_test

// The sweep engine registers the check of a scheduled sweep at load
// (config.RegisterSweepCheck): linked here, as the daemon and check-config
// link it, so that this package's tests load configs as they do.
import _ "github.com/llmprobe/llmprobe/prober/sweep"

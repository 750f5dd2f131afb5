package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/config"

	lpconfig "github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// addHTTPConfigFlag adds --http.config.file, the flag of that name in
// promtool and the exporters, with the sweep setting's help (`workload
// stats` takes it too).
func addHTTPConfigFlag(cmd *kingpin.CmdClause, p *string) {
	cmd.Flag("http.config.file", sweep.LookupFlag("http.config.file").Doc).StringVar(p)
}

// loadHTTPConfigFlag reads the HTTP config file named by --flag (empty:
// none) as the daemon reads a target's http_config
// (lpconfig.LoadHTTPConfigFile). An error is a *flagError naming the flag,
// the file, the line and the field; credentials in it besides
// --api-key-file (apiKeyFile) are refused as ambiguous.
func loadHTTPConfigFlag(flag, path, apiKeyFile string) (config.HTTPClientConfig, error) {
	if path == "" {
		return config.HTTPClientConfig{}, nil
	}
	h, err := lpconfig.LoadHTTPConfigFile(path)
	if err != nil {
		return h, &flagError{flag: flag, err: err}
	}
	if apiKeyFile != "" && (h.Authorization != nil || h.BasicAuth != nil || h.OAuth2 != nil) {
		return h, &flagError{flag: flag, err: fmt.Errorf("%s: ambiguous credentials: --api-key-file and the file's "+
			"authorization, basic_auth or oauth2 both set the Authorization header; keep one", path)}
	}
	return h, nil
}

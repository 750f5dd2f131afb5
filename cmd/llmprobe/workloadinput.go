package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// `workload stats` exit codes, as analyze's: bad input (flags, a file that
// is not a dataset or trace, a secret file) is one line and exit 2; a
// server that fails (--target's discovery or tokenizer) exit 1.

// badWorkloadFile reports a file that could not be read as a dataset or a
// trace: one line naming the file, exit 2.
func badWorkloadFile(e *env, file string, err error) int {
	msg := oneLine(err.Error())
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Path + ": " + pe.Err.Error()
	}
	for _, p := range []string{"dataset: ", "trace: ", "dataset ", "trace "} {
		msg = strings.TrimPrefix(msg, p)
	}
	msg = strings.TrimSuffix(msg, "; give format") // the flag's name, below
	if strings.Contains(msg, "cannot tell the format") {
		msg += "; give --dataset-format"
	}
	if !strings.Contains(msg, file) {
		msg = file + ": " + msg
	}
	fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", msg)
	return 2
}

// statsTokenizer reads --api-key-file and --http.config.file (bad files:
// exit 2, naming the flag) and sets up --target's prompt sizing (a failure:
// exit 1, with the secrets of both redacted). It returns the tokenizer, the
// secrets to redact from later errors and the func that closes the
// target's connections, or a non-zero exit code.
func statsTokenizer(e *env, f *workloadFlags) (workload.Tokenizer, []string, func(), int) {
	var key config.Secret
	if f.apiKeyFile != "" {
		var err error
		if key, err = rundir.ReadAPIKeyFile(f.apiKeyFile); err != nil {
			fmt.Fprintf(e.stderr, "llmprobe: error: --api-key-file: %v\n", err)
			return nil, nil, nil, 2
		}
	}
	h, err := rundir.LoadHTTPConfigFlag("http.config.file", f.httpConfigFile, f.apiKeyFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(err.Error()))
		return nil, nil, nil, 2
	}
	hs, err := client.HTTPSecrets(h)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --http.config.file: %s\n", oneLine(err.Error()))
		return nil, nil, nil, 2
	}
	secrets := redact.SortSecrets(append([]string{string(key)}, client.SecretValues(hs)...))
	sz, closeTarget, err := endpoint.DiscoverSizing(e.ctx, endpoint.Options{BaseURL: f.target, API: f.api, Model: f.model,
		APIKey: key, HTTPConfig: h, Logger: e.logger, Timeout: time.Minute})
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --target: %s\n", oneLine(redact.Secrets(err.Error(), secrets...)))
		return nil, nil, nil, 1
	}
	return sz.Tokenizer, secrets, closeTarget, 0
}

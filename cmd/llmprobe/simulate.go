package main

import (
	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("simulate", "Serve the built-in vLLM simulator: vLLM's OpenAI API (completions, chat, SSE "+
			"streaming, tokenize), its /metrics and a continuous-batching engine with a known capacity and optional "+
			"fault injection; --engine sglang|tgi|llamacpp|ollama serves another engine's metric names, info and "+
			"tokenizer endpoints and stream quirks over the same engine model. See docs/simulator.md.")
		addr := cmd.Flag("web.listen-address", "Address to serve the simulated API and /metrics on (or "+webListenEnv+", which `llmprobe healthcheck` reads too).").
			Default("127.0.0.1:8000").Envar(webListenEnv).String()
		cfg := simulator.DefaultConfig()
		simulator.AddFlags(cmd, &cfg)
		// Invalid values fail parsing: one line on stderr, exit code 2.
		cmd.Validate(func(*kingpin.CmdClause) error { return cfg.Validate() })
		return cmd.FullCommand(), func(e *env) int {
			if err := simulator.ListenAndServe(e.ctx, cfg, *addr, e.logger); err != nil {
				level.Error(e.logger).Log("msg", "simulator failed", "err", err)
				return 1
			}
			return 0
		}
	})
}

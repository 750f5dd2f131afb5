package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// workloadFlags hold `llmprobe workload stats|synth`'s flags.
type workloadFlags struct {
	file, format, datasetFormat    string
	target, model, api, apiKeyFile string
	httpConfigFile                 string
	from, out                      string
	count, blockSize               int
	seed                           uint64
}

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &workloadFlags{}
		st := workloadCommand(app).Command("stats", "Print p10/p50/p90/p99/max of input and output tokens, arrival rate and "+
			"burstiness (timed files) and prefix share of a dataset file (JSONL or ShareGPT) or a trace (Mooncake or offsets JSONL).")
		st.Arg("file", "Dataset or trace file.").Required().StringVar(&f.file)
		st.Flag("format", "Output format: text or json (the stats file `workload synth --from` reads).").Default("text").StringVar(&f.format)
		st.Flag("dataset-format", "Format of the file: auto (a JSONL file whose first entry has input_length or input_tokens "+
			"and no prompt is a trace), jsonl, sharegpt or trace.").Default("auto").StringVar(&f.datasetFormat)
		st.Flag("trace-block-size", "Tokens one hash id of a trace stands for (Mooncake's traces: 512).").
			Default(strconv.Itoa(workload.DefaultTraceBlockSize)).IntVar(&f.blockSize)
		st.Flag("target", "Count tokens with this server's tokenizer (its /tokenize, else a calibration from usage.prompt_tokens); "+
			"without it the offline estimate (4 characters per token) is used.").StringVar(&f.target)
		st.Flag("model", "Model of --target (default: the first /v1/models lists).").StringVar(&f.model)
		st.Flag("api", "API whose prompt counting to use with --target: completions or chat (the chat template counted).").
			Default(client.DefaultAPI).StringVar(&f.api)
		st.Flag("api-key-file", "File holding --target's API key.").StringVar(&f.apiKeyFile)
		addHTTPConfigFlag(st, &f.httpConfigFile)
		return st.FullCommand(), func(e *env) int { return runWorkloadStats(e, f) }
	})
	register(func(app *kingpin.Application) (string, action) {
		f := &workloadFlags{}
		sy := workloadCommand(app).Command("synth", "Write a synthetic JSONL dataset matching a `workload stats --format json` file.")
		sy.Flag("from", "Stats JSON file (from `llmprobe workload stats --format json`).").Required().StringVar(&f.from)
		sy.Flag("count", "Entries to write (default: the stats' count).").IntVar(&f.count)
		sy.Flag("seed", "Seed of every draw.").Default("1").Uint64Var(&f.seed)
		sy.Flag("out", "Output file (default: stdout).").StringVar(&f.out)
		return sy.FullCommand(), func(e *env) int { return runWorkloadSynth(e, f) }
	})
}

// addHTTPConfigFlag adds --http.config.file, the flag of that name in
// promtool and the exporters, with the sweep setting's help (`workload
// stats` takes it too).
func addHTTPConfigFlag(cmd *kingpin.CmdClause, p *string) {
	cmd.Flag("http.config.file", sweep.LookupFlag("http.config.file").Doc).StringVar(p)
}

// workloadCommand returns app's `workload` command, adding it once.
func workloadCommand(app *kingpin.Application) *kingpin.CmdClause {
	if c := app.GetCommand("workload"); c != nil {
		return c
	}
	return app.Command("workload", "Describe a dataset's token distributions, or draw a synthetic dataset from them. See docs/workload.md.")
}

func runWorkloadStats(e *env, f *workloadFlags) int {
	if f.format != "text" && f.format != "json" {
		fmt.Fprintf(e.stderr, "llmprobe: error: --format: must be text or json, got %q\n", f.format)
		return 2
	}
	if f.target == "" && (f.httpConfigFile != "" || f.apiKeyFile != "") {
		fmt.Fprintln(e.stderr, "llmprobe: error: --http.config.file and --api-key-file apply to --target's requests: give --target")
		return 2
	}
	if f.datasetFormat == "trace" || f.datasetFormat == "auto" && workload.SniffTrace(f.file) {
		return runTraceStats(e, f)
	}
	ds, err := workload.LoadDataset(f.file, workload.DatasetOptions{Format: f.datasetFormat})
	if err != nil {
		return badWorkloadFile(e, f.file, err)
	}
	var tok workload.Tokenizer = workload.EstimateTokenizer{}
	var secrets []string
	if f.target != "" {
		var code int
		var closeTarget func()
		if tok, secrets, closeTarget, code = statsTokenizer(e, f); code != 0 {
			return code
		}
		defer closeTarget()
	} else if ds.HasMessages {
		// Without a server, a conversation is counted as its joined text.
		fmt.Fprintln(e.stderr, "llmprobe: note: messages entries are counted as their contents joined; give --target --api chat for the template")
	}
	st, info, err := workload.DatasetStats(e.ctx, ds, tok)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(redact.Secrets(err.Error(), secrets...)))
		if errors.Is(err, workload.ErrAllPruned) {
			return 2
		}
		return 1
	}
	return printStats(e.stdout, f.format, st, func(w io.Writer) { report.WriteDatasetStats(w, st, info) })
}

// runTraceStats is `workload stats` of a trace: its own lengths (no
// tokenizer), offsets and hash-id prefixes.
func runTraceStats(e *env, f *workloadFlags) int {
	if f.target != "" {
		fmt.Fprintln(e.stderr, "llmprobe: error: --target: does not apply to a trace (its lengths are token counts already)")
		return 2
	}
	if f.blockSize < 1 {
		fmt.Fprintf(e.stderr, "llmprobe: error: --trace-block-size: must be >= 1, got %d\n", f.blockSize)
		return 2
	}
	tr, err := workload.LoadTrace(f.file, workload.TraceOptions{BlockSize: f.blockSize})
	if err != nil {
		return badWorkloadFile(e, f.file, err)
	}
	st := workload.TraceStats(tr)
	return printStats(e.stdout, f.format, st, func(w io.Writer) { report.WriteTraceStats(w, tr, st) })
}

// printStats prints st as JSON (--format json) or as text.
func printStats(w io.Writer, format string, st workload.Stats, text func(io.Writer)) int {
	if format == "json" {
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
		return 0
	}
	text(w)
	return 0
}

func runWorkloadSynth(e *env, f *workloadFlags) int {
	b, err := rundir.ReadCapped(f.from, 1<<20, "a stats file")
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --from: %v\n", err)
		return 2
	}
	st, err := workload.DecodeStats(b)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --from: %s: %v\n", f.from, err)
		return 2
	}
	if f.count < 0 {
		fmt.Fprintf(e.stderr, "llmprobe: error: --count: must be >= 1, got %d\n", f.count)
		return 2
	}
	w, closeOut := e.stdout, func() error { return nil }
	if f.out != "" {
		out, err := os.Create(f.out)
		if err != nil {
			fmt.Fprintf(e.stderr, "llmprobe: error: --out: %v\n", err)
			return 1
		}
		w, closeOut = out, out.Close
	}
	n, err := workload.Synthesize(w, st, workload.SynthOptions{Count: f.count, Seed: f.seed})
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --from: %s: %v\n", f.from, err)
		return 2
	}
	if f.out != "" {
		fmt.Fprintf(e.stderr, "wrote %d entries to %s\n", n, f.out)
	}
	return 0
}

package archtest

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

var updateBounds = flag.Bool("update", false, "rewrite the generated bound tables of docs/security.md")

// boundRow is one named bound constant of docs/security.md's Bounds
// section: where it is declared, what it bounds and on which surfaces a
// user meets it. Its value is read from the source.
type boundRow struct {
	pkg, name, what, surfaces string
}

// boundRows is every bound a user can hit that is a named constant (the
// sweep settings' bounds come from the settings table). TestBoundsDoc
// fails for an exported Max*/Min* constant of the module that is neither
// here nor in notUserBounds.
var boundRows = []boundRow{
	// Files read.
	{"prober/config", "MaxConfigFileBytes", "a configuration file (`serve --config.file`, `check-config`, `sweep --workload`)", "files"},
	{"prober/config", "maxKeyFileBytes", "an `api_key_file` of the configuration", "YAML, files"},
	{"prober/config", "MaxHTTPConfigFileBytes", "an HTTP client configuration file (`--http.config.file`)", "flags, files"},
	{"prober/client", "MaxSecretFileBytes", "one secret file of an HTTP config (bearer token, password, header value)", "YAML, files"},
	{"internal/rundir", "MaxAPIKeyFileBytes", "`sweep --api-key-file`", "flags, files"},
	{"internal/daemon", "maxWebConfigBytes", "`--web.config.file` at startup", "flags, files"},
	{"prober/workload", "MaxDatasetBytes", "a dataset file (`--dataset`, a sweep's `dataset`)", "flags, YAML, API, files"},
	{"prober/workload", "MaxDatasetLineBytes", "one line of a JSONL dataset (streamed: refused once read that far)", "files"},
	{"prober/workload", "MaxDatasetEntries", "the entries of a dataset", "files"},
	{"prober/workload", "MaxDatasetMessages", "the messages of one dataset entry", "files"},
	{"prober/workload", "maxOffset", "a dataset entry's `offset_ms`", "files"},
	{"prober/workload", "MaxTraceBytes", "a trace file (`--trace`)", "flags, YAML, API, files"},
	{"prober/workload", "MaxTraceLineBytes", "one line of a trace", "files"},
	{"prober/workload", "MaxTraceEntries", "the entries of a trace", "files"},
	{"prober/workload", "MaxTraceHashIDs", "the hash ids of a trace, all entries together", "files"},
	{"prober/workload", "MaxTraceBlockSize", "a trace's `block_size` (tokens per hash id)", "YAML, API, files"},
	{"prober/workload", "MaxTraceOffset", "a trace entry's offset; the span of `workload synth`'s arrivals", "files"},
	{"prober/workload", "MaxTraceSpeeds", "the `speeds` of a trace spec (each one a step)", "YAML, API"},
	{"prober/workload", "MaxSchemaBytes", "a JSON schema (inline or file)", "YAML, API, files"},
	{"prober/workload", "MaxSchemaDepth", "the nesting of a JSON schema", "YAML, API, files"},
	{"prober/workload", "MaxCheckCost", "the work of checking one reply or tool call against a JSON schema (64 B + the value's size per subschema applied)", "targets"},
	{"prober/workload", "MaxCheckDepth", "the nesting of subschemas applied while checking one reply against a JSON schema", "targets"},
	{"internal/artifacts", "MaxFileBytes", "a run-directory file read whole (`manifest.json`, `result.json`, a snapshot; a result file given to `analyze`)", "files"},
	{"internal/artifacts", "maxRecordLine", "one line of `records.jsonl` read back", "files"},
	{"internal/rundir", "MaxServerLogBytes", "`server.log` of a run (`--server-log`); later steps' lines are left out, the file says so", "flags, files"},
	{"internal/web", "MaxSweepBodyBytes", "the body of `POST /api/v1/sweeps` (413 above)", "API"},
	// Workload and request shape.
	{"prober/workload", "MaxLength", "every token length drawn or given (input, output, prefix, a distribution's max)", "flags, YAML, API, files"},
	{"prober/workload", "MaxFeatures", "the request features of a workload", "YAML, API"},
	{"prober/workload", "MaxStops", "the stop strings of a request", "flags, YAML, API"},
	{"prober/workload", "MaxStopBytes", "one stop string", "flags, YAML, API"},
	{"prober/workload", "MaxTopLogprobs", "`top_logprobs`", "flags, YAML, API"},
	{"prober/workload", "MaxTools", "the tools of a `tools` feature", "YAML, API"},
	{"prober/client", "MaxInputs", "the inputs of an embeddings request, the documents of a rerank query (`batch_size`, `--batch-size`)", "flags, YAML, API"},
	{"prober/workload", "MaxToolDescriptionBytes", "one tool's description", "YAML, API"},
	{"prober/workload", "MaxImages", "the images of one request (`images` feature `count`)", "YAML, API"},
	{"prober/workload", "MaxImageWidth", "an image's width in pixels (`images` feature)", "YAML, API"},
	{"prober/workload", "MaxImageHeight", "an image's height in pixels (`images` feature)", "YAML, API"},
	{"prober/workload", "MaxRequestImageBytes", "the encoded image bytes of one request, at their worst case (`count` × 3 bytes a pixel and margins)", "YAML, API"},
	{"prober/workload", "MaxImageDistinct", "the pool of images an `images` feature reuses (`distinct`)", "YAML, API"},
	{"prober/workload", "MaxImagePoolBytes", "that pool's encoded bytes at their worst case, kept for a probe's or a sweep's life", "YAML, API"},
	{"prober/workload", "MaxExtraBodyBytes", "`extra_body`, encoded", "flags, YAML, API"},
	{"prober/workload", "MaxTurns", "the turns of a multi-turn session", "YAML, API"},
	{"prober/workload", "MaxThinkTime", "a multi-turn session's think time", "YAML, API"},
	// workload synth.
	{"prober/workload", "MaxSynthCount", "`workload synth --count`", "flags"},
	{"prober/workload", "MaxSynthBytes", "what `workload synth` writes", "flags, files"},
	{"prober/workload", "MinSynthRate", "a stats file's `rate_per_s` (lowest)", "files"},
	{"prober/workload", "MaxSynthRate", "a stats file's `rate_per_s` (highest)", "files"},
	{"prober/workload", "MaxSynthGapCV2", "a stats file's `gap_cv2`", "files"},
	// Answer checks (docs/quality.md).
	{"prober/answer", "MaxSetBytes", "an answer-check set file (`answer_checks.set`, `--answer-checks`)", "flags, YAML, files"},
	{"prober/answer", "MaxChecks", "the checks of a set", "files"},
	{"prober/answer", "MaxIDBytes", "a check's `id` (the check label)", "files"},
	{"prober/answer", "MaxPromptBytes", "a check's `prompt`, or its `messages`' contents together", "files"},
	{"prober/answer", "MaxMessages", "a check's `messages`", "files"},
	{"prober/answer", "MaxCheckTokens", "a check's `max_tokens`", "files"},
	{"prober/answer", "MaxExpectBytes", "an `exact`, `contains` or `stop` expectation", "files"},
	{"prober/answer", "MaxRegexBytes", "a `regex` expectation", "files"},
	{"prober/answer", "MaxRegexReplyBytes", "the part of a reply a `regex` check matches (its first bytes)", "targets"},
	{"prober/answer", "MaxRegexWork", "a `regex` match: the pattern's instructions × the reply bytes matched", "targets"},
	{"prober/answer", "MaxDocBytes", "a check's `doc`", "files"},
	{"prober/answer", "MaxReplyBytes", "the reply a check's result keeps and the landing page may show", "targets"},
	{"prober/answer", "MaxReasonBytes", "why a check failed, as kept and shown", "targets"},
	{"prober/config", "MinAnswerCheckEvery", "`answer_checks.every`, shortest", "YAML"},
	{"prober/config", "MaxAnswerCheckEvery", "`answer_checks.every`, longest", "YAML"},
	{"prober/compare", "MaxLowMargin", "`compare --answer-low-margin` (nats)", "flags"},
	{"prober/compare", "MaxAnswerRepeats", "`compare --answer-repeats`", "flags"},
	{"prober/compare", "MaxQualityReplyBytes", "each reply a compare report quotes (failing checks)", "targets"},
	// Load.
	{"prober/sweep", "MinRate", "an open-loop rate of a sweep step", "flags, YAML, API"},
	{"prober/sweep", "MaxInFlight", "a sweep's concurrency levels and `max_concurrency`", "flags, YAML, API"},
	{"prober/sweep", "MaxLevels", "the levels of a sweep and the speeds of a replay", "flags, YAML, API"},
	{"prober/sweep", "MaxStepRequests", "the requests of one step (`num_prompts`, `min_prompts`, `warmups`, rate × duration)", "flags, YAML, API"},
	{"prober/sweep", "MaxShards", "`--shard-count`", "flags"},
	{"prober/sweep", "MaxTraceSpeed", "a replay speed", "flags, YAML, API"},
	{"prober/sweep", "MaxCostPerHour", "`--cost-per-hour`, a target's `cost_per_hour`", "flags, YAML"},
	{"prober/sweep", "DefaultMaxStepBytes", "`records.jsonl` bytes of one step (`--max-step-bytes` default)", "flags"},
	{"prober/arrival", "MaxRate", "the arrivals per second any arrival process yields", "flags, YAML, API"},
	{"prober/arrival", "MinBurstiness", "the gamma shape (`--burstiness`, `burstiness`), lowest", "flags, YAML, API"},
	{"prober/arrival", "MaxBurstiness", "the gamma shape, highest", "flags, YAML, API"},
	{"prober/arrival", "MaxBurst", "the longest run of arrivals at any spacing", "flags, YAML, API"},
	{"prober/arrival", "MaxSpeedup", "how much faster than its mean rate a process may yield past a burst", "flags, YAML, API"},
	{"prober/config", "MinProbeRate", "a daemon probe's `rate`", "YAML"},
	{"prober/config", "DefaultMaxRate", "`global.max_rate` default: a probe's rate at most", "YAML"},
	{"prober/config", "MaxProbeConcurrency", "a daemon probe's `max_concurrency`", "YAML"},
	{"prober/config", "MinDefaultConcurrency", "a probe's derived default `max_concurrency`, lowest", "YAML"},
	{"prober/config", "MaxDefaultConcurrency", "a probe's derived default `max_concurrency`, highest", "YAML"},
	{"prober/config", "MinSweepInterval", "a scheduled sweep's `every`", "YAML"},
	{"prober/config", "MaxTargets", "the `targets` list (discovery's targets are bounded apart)", "YAML"},
	{"prober/config", "MaxProbesPerTarget", "a target's `probes` (a discovery template's too)", "YAML"},
	{"prober/config", "MaxSweepsPerTarget", "a target's scheduled `sweeps`", "YAML"},
	{"prober/config", "MaxTargetLabels", "a target's static labels", "YAML"},
	{"prober/config", "MaxTargetLabelValueLen", "one static label value", "YAML"},
	{"prober/config", "MaxDiscoveredTargets", "the targets service discovery starts, all `discovery` entries together: their `max_targets` (each reserved for its entry) add up to at most this", "YAML, discovered"},
	{"prober/config", "MaxDiscoveryEntries", "the entries of the `discovery` list", "YAML"},
	{"prober/client", "MaxTokenResponseBytes", "an OAuth2 token endpoint's answer", "responses"},
	{"prober/config", "MaxSDBytes", "a file_sd file, an http_sd answer (refused on its Content-Length, cut when longer)", "files, discovered"},
	{"prober/config", "MaxDiscoveredLabelNameLen", "a label name of a discovered target after relabelling (`__meta_*` aside; longer: dropped as `invalid`)", "discovered"},
	{"prober/config", "MaxDiscoveredLabelValueLen", "a label value of a discovered target after relabelling (`__meta_*` aside; longer: dropped as `invalid`)", "discovered"},
	{"prober/config", "MaxTargetNameLen", "a discovered target's name (`<entry>:<address>` or `__target_name__`)", "discovered"},
	// Network.
	{"internal/web", "DefaultMaxRequests", "`--web.max-requests` default: connections and requests served at once", "flags"},
	{"prober/client", "DefaultMaxBodyBytes", "a target's response body (`max_body_bytes` default)", "YAML"},
	{"prober/config", "MaxResponseBodyBytes", "a target's or module's `max_body_bytes`", "YAML"},
	{"prober/client", "MaxCollect", "the text a request collects for checks", "YAML, API"},
	{"prober/client", "MaxToolCalls", "the tool calls assembled from one response (more: `invalid_response`)", "targets"},
	{"prober/client", "MaxToolCallBytes", "the arguments of one response's tool calls together (more: `invalid_response`)", "targets"},
	{"prober/endpoint", "MaxInfoBodyBytes", "a target's `/v1/models` or `/version` answer", "targets"},
	{"prober/sse", "DefaultMaxEventBytes", "one server-sent event or line of a stream", "targets"},
	{"prober/scrape", "DefaultMaxBytes", "a `/metrics` scrape body", "targets"},
	{"prober/gpusel", "MaxBytes", "`--gpu-selector`, a target's `gpu_selector`, a discovered `__gpu_selector__`", "flags, YAML, discovered"},
	{"internal/web", "MaxSweepStarts", "`POST /api/v1/sweeps` requests served at once (more: 429 with Retry-After)", "API"},
	{"internal/web", "MaxSweepReads", "sweep `GET` / `DELETE` requests served at once (more: 429)", "API"},
	{"internal/web", "MaxSweepFileReads", "run-directory file downloads served at once (more: 429)", "API"},
	{"internal/web", "MaxReloads", "`/-/reload` requests served at once (more: 429)", "API"},
	{"internal/web", "MaxNoBodyBytes", "the body of an API request that takes none (more: 413)", "API"},
	{"internal/web", "MaxListSweeps", "`GET /api/v1/sweeps?limit=`: sweeps listed in one answer", "API"},
	{"internal/web", "MaxProbes", "`GET /probe` requests served at once, any targets (more: 429; one per target and module)", "API"},
	{"internal/web", "MaxProbeCount", "`GET /probe?count=`: requests one probe sends (more: 400)", "API"},
	{"internal/web", "MaxProbeQueryBytes", "the query string of `GET /probe` (more: 400)", "API"},
	{"prober/config", "MaxModules", "the `modules` of `GET /probe`", "YAML"},
	{"prober/config", "MaxProbeAllowedTargets", "the entries of `probe_allowed_targets`", "YAML"},
	{"prober/config", "MaxProbeTargetLen", "a `GET /probe` `target` and an entry of `probe_allowed_targets`", "YAML, API"},
	{"prober/client", "MaxAttributionHeaders", "a target's or module's `attribution_headers`", "YAML"},
	{"prober", "MaxHeaderValueLen", "a recorded response header value (an attribution header, the `x-request-id` echo): cut there", "targets"},
	{"prober", "MaxAttributionValues", "the distinct values of one attribution header per target (later new ones are recorded as `other`)", "targets"},
	{"prober", "MaxResponseIDBytes", "a streamed reply's `id` and `model` as a trace span carries them (`gen_ai.response.id`, `gen_ai.response.model`): cut there", "targets"},
	{"prober/redact", "MaxRecentSecrets", "secrets learned from sent requests that a target's redactor keeps besides the config's (the oldest dropped first)", "targets"},
	{"prober/sweep", "MaxRounds", "`--rounds` / `rounds`: a sweep's repeats of each level, compare's rounds in all", "flags, YAML, API"},
	{"prober/sweep", "MaxAutoSteps", "`--auto-max-steps`: the steps of an adaptive search", "flags"},
	{"prober/sweep", "MaxKneeRepeats", "`--knee-repeats`: the runs of the levels that bracket the knee", "flags"},
	{"prober/sweep", "MaxTimeout", "`--timeout`, `--ttft-timeout`, `--stall-timeout`", "flags"},
	{"prober/config", "MaxTimeout", "a target's or probe's `timeout` (its `ttft_timeout` and `stall_timeout` may not exceed it)", "YAML"},
	{"prober/sweep", "MaxStepDuration", "`--duration` / `duration`: a step's arrival window", "flags, YAML, API"},
	{"prober/sweep", "MaxWait", "`--idle-timeout`, `--step-interval`, `--metrics-interval`, `--max-send-lag` / `max_send_lag`", "flags, YAML, API"},
	{"prober/sweep", "MaxBackgroundBand", "`--background-band` / `background_band`: how far a background sweep's production may move during a step", "flags, YAML, API"},
	{"internal/daemon", "MinSampleRatio", "`--tracing.sample-ratio` of `serve`, `sweep` and `compare` (at most 1: every request)", "flags"},
	{"prober/config", "MinTracingSampleRatio", "the config file's `tracing.sample_ratio` (at most 1)", "YAML"},
	{"prober/config", "MaxTracingHeaders", "the config file's `tracing.headers`", "YAML"},
	{"prober/config", "MaxTracingHeaderBytes", "one of `tracing.headers`, name and value; a `tracing.header_files` file", "YAML, files"},
	{"prober/config", "MaxTracingTimeout", "`tracing.timeout`, one export to the collector", "YAML"},
}

// notUserBounds are exported Max*/Min* constants that no user input meets,
// with why.
var notUserBounds = map[string]string{
	"MaxReproducibleSpread": "a report threshold (a level's rounds spread), not a limit",
	"MaxZ":                  "the boundary of a sequential look that spends no alpha (an interval of everything), not a limit",
	"MaxCountDiff":          "compare's tolerance on request counts, not a limit",
	"MaxFinishTVD":          "compare's tolerance on finish reasons, not a limit",
	"MinPromptEcho":         "the shortest prompt echo the scrubber removes",
	"MaxKneeSamples":        "the bootstrap's sample cap; a larger step's interval says so",
	"MinSLOSamples":         "a statistical rule (a p99 needs 100 samples)",
	"MinCacheHitTokens":     "a classification threshold (a prefix-cache hit from one vLLM block), not a limit",
	"MinSendsOverLimit":     "a validity rule",
	"MinSizingBackoff":      "a retry delay",
	"MaxSizingBackoff":      "a retry delay",
	"MaxServerMillis":       "a server-reported time above it is not kept (vLLM's per-request metrics), not a limit on input",
	"MaxLogprobs":           "the built-in simulator's",
	"MaxEvidenceFactor":     "the verdict's wording: past it compare says more of the same evidence would not decide",
	"MaxRoundReruns":        "compare reruns a client-flagged round at most once; not an input",
	"MaxPromptNonce":        "an int64's range: `prompt_nonce` takes any non-negative int64, a nonce, not an amount",
	"MaxOnceCount":          "the probe engine's cap behind internal/web.MaxProbeCount (the same value, documented there)",
	"MinSecretLen":          "the shortest literal secret the redactor removes (shorter values would mangle output; the shape rules still apply)",
	"MaxLogprobTokens":      "a library option's cap (client.Logprobs.Max); no flag or key sets it",
	"MinQualityChecks":      "a statistical rule (compare's quality section decides from 10 checks on)",
	// issue 40 Deliver 2: sequential compare's design.
	"MaxSequentialRounds": "a sequential compare's round cap: its looks stop there as at --budget, saying so; no input is refused",
	"MaxLooks":            "the sequential design's look plan (a look every few blocks past it), not a limit",
	"MinClusterRounds":    "a statistical rule (the bootstrap draws rounds only from 10 rounds per side)",

	// issue 26: the least samples over the limit that flag client-read-lag.
	"MinSchedLatencyOverLimit": "a validity rule",
}

// constSource is one top-level constant read from the source: its
// expression, the directory of its package and the imports of its file.
type constSource struct {
	dir     string
	expr    ast.Expr
	imports map[string]string // local name -> module-relative dir
	typ     ast.Expr
}

// walkGoSources calls fn with the path of every non-test Go file of the
// module (testdata and hidden folders left out), failing the test on the
// first error.
func walkGoSources(t *testing.T, fn func(path string) error) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && path != root)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return fn(path)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readConsts parses every non-test Go file of the module and returns its
// top-level constants by "dir.Name".
func readConsts(t *testing.T) map[string]*constSource {
	t.Helper()
	out := map[string]*constSource{}
	walkGoSources(t, func(path string) error {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		dir := filepath.ToSlash(rel)
		imports := map[string]string{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = strings.TrimPrefix(p, module+"/")
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			var last ast.Expr
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					e := last
					if i < len(vs.Values) {
						e = vs.Values[i]
					}
					out[dir+"."+n.Name] = &constSource{dir: dir, expr: e, imports: imports, typ: vs.Type}
				}
				if len(vs.Values) > 0 {
					last = vs.Values[len(vs.Values)-1]
				}
			}
		}
		return nil
	})
	return out
}

// constValue is an evaluated constant: a number, and whether it is a
// time.Duration.
type constValue struct {
	v        float64
	duration bool
}

// eval evaluates the constant expressions bound constants use: number
// literals, + - * / <<, parentheses, conversions, time units and other
// constants of the module.
func eval(consts map[string]*constSource, c *constSource, e ast.Expr) (constValue, error) {
	switch x := e.(type) {
	case *ast.BasicLit:
		v, err := strconv.ParseFloat(strings.ReplaceAll(x.Value, "_", ""), 64)
		if err != nil {
			i, ierr := strconv.ParseInt(strings.ReplaceAll(x.Value, "_", ""), 0, 64)
			if ierr != nil {
				return constValue{}, err
			}
			v = float64(i)
		}
		return constValue{v: v}, nil
	case *ast.ParenExpr:
		return eval(consts, c, x.X)
	case *ast.UnaryExpr:
		v, err := eval(consts, c, x.X)
		if x.Op == token.SUB {
			v.v = -v.v
		}
		return v, err
	case *ast.CallExpr: // a conversion: int64(x), time.Duration(x)
		if len(x.Args) != 1 {
			return constValue{}, fmt.Errorf("call %T", x.Fun)
		}
		v, err := eval(consts, c, x.Args[0])
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Duration" {
			v.duration = true
		}
		return v, err
	case *ast.BinaryExpr:
		a, err := eval(consts, c, x.X)
		if err != nil {
			return a, err
		}
		b, err := eval(consts, c, x.Y)
		if err != nil {
			return b, err
		}
		r := constValue{duration: a.duration || b.duration}
		switch x.Op {
		case token.ADD:
			r.v = a.v + b.v
		case token.SUB:
			r.v = a.v - b.v
		case token.MUL:
			r.v = a.v * b.v
		case token.QUO:
			r.v = a.v / b.v
		case token.SHL:
			r.v = a.v * math.Pow(2, b.v)
		default:
			return r, fmt.Errorf("operator %s", x.Op)
		}
		return r, nil
	case *ast.Ident:
		d, ok := consts[c.dir+"."+x.Name]
		if !ok {
			return constValue{}, fmt.Errorf("unknown %s", x.Name)
		}
		return evalConst(consts, d)
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		if !ok {
			return constValue{}, fmt.Errorf("selector %T", x.X)
		}
		if c.imports[pkg.Name] == "math" {
			limits := map[string]float64{"MaxInt64": math.MaxInt64, "MaxInt32": math.MaxInt32, "MaxUint32": math.MaxUint32}
			if v, ok := limits[x.Sel.Name]; ok {
				return constValue{v: v}, nil
			}
		}
		if c.imports[pkg.Name] == "time" {
			units := map[string]time.Duration{"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond,
				"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
			if u, ok := units[x.Sel.Name]; ok {
				return constValue{v: float64(u), duration: true}, nil
			}
		}
		d, ok := consts[c.imports[pkg.Name]+"."+x.Sel.Name]
		if !ok {
			return constValue{}, fmt.Errorf("unknown %s.%s", pkg.Name, x.Sel.Name)
		}
		return evalConst(consts, d)
	}
	return constValue{}, fmt.Errorf("expression %T", e)
}

func evalConst(consts map[string]*constSource, c *constSource) (constValue, error) {
	v, err := eval(consts, c, c.expr)
	if sel, ok := c.typ.(*ast.SelectorExpr); ok && sel.Sel.Name == "Duration" {
		v.duration = true
	}
	return v, err
}

// formatBound writes a bound's value as the docs do: sizes in KiB, MiB or
// GiB for a constant named *Bytes (and MaxCollect and maxRecordLine, in bytes), durations in the largest whole unit,
// other numbers with thousands separators.
func formatBound(name string, v constValue) string {
	switch {
	case v.duration:
		d := time.Duration(v.v)
		for _, u := range []struct {
			d    time.Duration
			unit string
		}{{24 * time.Hour, " days"}, {time.Hour, " h"}, {time.Minute, " min"}, {time.Second, " s"}, {time.Millisecond, " ms"}} {
			if d >= u.d && d%u.d == 0 {
				n := int64(d / u.d)
				if n == 1 && u.unit == " days" {
					return "1 day"
				}
				return strconv.FormatInt(n, 10) + u.unit
			}
		}
		return d.String()
	case strings.HasSuffix(name, "Bytes") || name == "MaxCollect" || name == "maxRecordLine":
		for _, u := range []struct {
			n    float64
			unit string
		}{{1 << 30, " GiB"}, {1 << 20, " MiB"}, {1 << 10, " KiB"}} {
			if v.v >= u.n && math.Mod(v.v, u.n) == 0 {
				return strconv.FormatFloat(v.v/u.n, 'f', -1, 64) + u.unit
			}
		}
		return strconv.FormatFloat(v.v, 'f', -1, 64) + " bytes"
	}
	return formatNumber(v.v)
}

// formatNumber writes 200000 as 200,000 and 0.01 as 0.01.
func formatNumber(v float64) string {
	if v != math.Trunc(v) || math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	s := strconv.FormatInt(int64(v), 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// constTable renders the named bound constants.
func constTable(t *testing.T, consts map[string]*constSource) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("| constant | value | bounds | surfaces |\n|---|---|---|---|\n")
	for _, r := range boundRows {
		c, ok := consts[r.pkg+"."+r.name]
		if !ok {
			t.Errorf("bound constant %s.%s is not declared (renamed or moved? update boundRows)", r.pkg, r.name)
			continue
		}
		v, err := evalConst(consts, c)
		if err != nil {
			t.Errorf("%s.%s: cannot evaluate: %v", r.pkg, r.name, err)
			continue
		}
		fmt.Fprintf(&b, "| `%s.%s` | %s | %s | %s |\n", r.pkg[strings.LastIndex(r.pkg, "/")+1:], r.name, formatBound(r.name, v), r.what, r.surfaces)
	}
	return b.String()
}

// boundText says a sweep setting's bound in words: "≥ 0.01, ≤ 256 values".
func boundText(s sweep.Setting) string {
	b := s.Bound
	g := func(x float64) string { return formatNumber(x) }
	var parts []string
	switch {
	case b.Text != "":
		parts = append(parts, strings.TrimPrefix(b.Text, "must be "))
	case b.HasMin && b.HasMax:
		lo, hi := "[", "]"
		if b.MinOpen {
			lo = "("
		}
		if b.MaxOpen {
			hi = ")"
		}
		parts = append(parts, "in "+lo+g(b.Min)+", "+g(b.Max)+hi)
	case b.HasMin && b.MinOpen:
		parts = append(parts, "> "+g(b.Min))
	case b.HasMin:
		parts = append(parts, "≥ "+g(b.Min))
	case b.HasMax:
		parts = append(parts, "≤ "+g(b.Max))
	}
	if b.Finite && b.Text == "" {
		parts = append(parts, "finite")
	}
	if b.MaxLen > 0 {
		parts = append(parts, "at most "+formatNumber(float64(b.MaxLen))+" values")
	}
	if !b.HasMax && b.Text == "" {
		parts = append(parts, "no upper bound in this table")
	}
	if s.Unit != "" && !strings.Contains(parts[0], s.Unit) {
		parts[0] += " " + s.Unit
	}
	return strings.Join(parts, "; ")
}

// settingsTable renders every sweep setting with a bound.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| setting | flag | YAML / JSON key | bound | surfaces |\n|---|---|---|---|---|\n")
	for _, s := range sweep.Settings() {
		bd := s.Bound
		if s.Internal || !(bd.HasMin || bd.HasMax || bd.MaxLen > 0 || bd.Finite || bd.Text != "") {
			continue
		}
		flagText, key := "-", "-"
		if s.Flag != "" {
			flagText = "`--" + s.Flag + "`"
		}
		if s.Key != "" {
			key = "`" + s.Key + "`"
		}
		var surf []string
		if s.Surfaces&sweep.SurfaceSweep != 0 {
			surf = append(surf, "sweep")
		}
		if s.Surfaces&sweep.SurfaceCompare != 0 && !s.CompareHidden {
			surf = append(surf, "compare")
		}
		if s.Surfaces&sweep.SurfaceSpec != 0 {
			surf = append(surf, "scheduled sweep (YAML), sweep API (JSON)")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.Field, flagText, key, boundText(s), strings.Join(surf, ", "))
	}
	return b.String()
}

// Markers of the generated blocks of docs/security.md.
const (
	settingsBegin = "<!-- bounds: sweep settings, generated by TestBoundsDoc (go test ./internal/archtest -run TestBoundsDoc -update) -->\n"
	settingsEnd   = "<!-- end of the generated sweep settings -->\n"
	constsBegin   = "<!-- bounds: named constants, generated by TestBoundsDoc (go test ./internal/archtest -run TestBoundsDoc -update) -->\n"
	constsEnd     = "<!-- end of the generated constants -->\n"
)

// replaceBlock returns doc with the text between begin and end replaced by
// body, and the text that was there.
func replaceBlock(doc, begin, end, body string) (string, string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return doc, "", fmt.Errorf("docs/security.md has no block %q … %q", strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	old := doc[i+len(begin) : j]
	return doc[:i+len(begin)] + body + doc[j:], old, nil
}

// TestBoundsDoc checks docs/security.md's Bounds section: its two tables
// are generated from the sweep settings table (every setting with a bound,
// its flag, key, bound and surfaces) and from the module's named bound
// constants (value read from the source), and every exported Max*/Min*
// constant of the module is listed or is in notUserBounds with a reason.
// After a bound changes, regenerate with -update and review the diff.
func TestBoundsDoc(t *testing.T) {
	consts := readConsts(t)
	listed := map[string]bool{}
	for _, r := range boundRows {
		listed[r.name] = true
	}
	var missing []string
	re := regexp.MustCompile(`^(Max|Min)[A-Z0-9]`)
	for key := range consts {
		dir, name, _ := strings.Cut(key, ".")
		if strings.HasPrefix(dir, "internal/simulator") || !re.MatchString(name) || listed[name] || notUserBounds[name] != "" {
			continue
		}
		missing = append(missing, key)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s: a bound a user can hit? add it to boundRows (what it bounds, surfaces) or to notUserBounds with why", m)
	}

	path := filepath.Join(root, "docs", "security.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	doc, oldSettings, err := replaceBlock(doc, settingsBegin, settingsEnd, settingsTable())
	if err != nil {
		t.Fatal(err)
	}
	doc, oldConsts, err := replaceBlock(doc, constsBegin, constsEnd, constTable(t, consts))
	if err != nil {
		t.Fatal(err)
	}
	if *updateBounds {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if oldSettings != settingsTable() {
		t.Errorf("docs/security.md's sweep-settings bounds differ from the settings table; regenerate with -update:\n%s", settingsTable())
	}
	if oldConsts != constTable(t, consts) {
		t.Errorf("docs/security.md's bound constants differ from the source; regenerate with -update:\n%s", constTable(t, consts))
	}
}

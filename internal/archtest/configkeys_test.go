package archtest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// keyRow is one row of the configuration key registry (configKeyRows):
// how a key a user can set in the daemon's YAML is bounded.
type keyRow struct {
	// max is the key's bound: a constant of the module ("dir.Name",
	// checked to exist), or a number whose why says what it is (a share's
	// 1). For a number or a duration, TestConfigKeysRegistry writes a
	// minimal valid configuration with the key just beyond it and requires
	// config.Parse to refuse it with an error naming the key. For a list
	// or a mapping it bounds the entries.
	max string
	// min is the lowest value, when below it is refused too: the check
	// writes the key just below it ("0": a negative value).
	min string
	// why says why the key needs no bound, or what a literal bound is.
	why string
	// with are the keys the check sets beside the key, for a configuration
	// where the key applies: paths relative to the mapping that holds the
	// key, "../" one mapping up, "^" the enclosing target or module
	// ("^api"); a nil value removes a key of the skeleton.
	with map[string]any
	// ok is a valid value of the key, set in the minimal configuration
	// the check starts from (which must load); nil: the key left out. For
	// a list, a mapping or a string with a bound it is the template of an
	// entry (a string's %d, a number: the entry's index + 1; a mapping's
	// values alike) or of the string (%s: the padding): the check then
	// writes max+1 entries, or a string max+1 bytes long, and requires a
	// refusal naming the key.
	ok any
	// namesMapping: the error may name the key's mapping only (a bound
	// derived from several keys: "turns: can draw 65 turns").
	namesMapping bool
	// only, when set, limits the generated check to the places whose path
	// holds it ("sweeps[]": a trace is a sweep's only); at the other
	// places the check requires that with alone is refused (the key cannot
	// be used there at all).
	only string
}

// Reasons shared by many rows.
const (
	whyName     = "a name: matches [a-zA-Z0-9_.:-]+ (or a label name's pattern), refused otherwise; its length is bounded by the configuration file's cap (prober/config.MaxConfigFileBytes)"
	whyEnum     = "an enum: validated by name, refused otherwise"
	whyBool     = "a bool"
	whyString   = "a string sent or matched as is: its length is bounded by the configuration file's cap (prober/config.MaxConfigFileBytes)"
	whyURL      = "a URL: parsed and validated at load (scheme, host, no credentials); its length is bounded by the configuration file's cap"
	whyPath     = "a file path: the file is read through prober/capfile with its own cap (the input surfaces table)"
	whySeed     = "a seed or a nonce: any value of its range names one random stream; it sizes nothing"
	whyExternal = "prometheus' own type: decoded and validated by its package (unknown keys refused), its files read through prober/capfile, redirects refused (one registered surface: docs/security.md)"
	whyShare    = "a share of requests: in (0, 1]"
	whyFileCap  = "a list whose entries are validated one by one: their number is bounded by the configuration file's cap (prober/config.MaxConfigFileBytes); each entry costs a few bytes at run time and drives no goroutine or request"
	whySampling = "a sampling parameter sent as is (finite, >= 0): it sizes nothing in the prober"
)

// imagesWith is the context of an images feature's keys.
var imagesWith = map[string]any{"kind": "images", "share": 1, "count": 1, "width": 8, "height": 8, "^api": "chat"}

// traceWith is the context of a sweep's workload.trace keys.
var traceWith = map[string]any{"path": "trace.jsonl", "../../rates": nil, "../input_tokens": nil, "../output_tokens": nil}

// configKeyRows is the registry of every key a user can set in the
// daemon's YAML (docs/security.md, "Configuration keys"): by the key's row
// (configKey.row). TestConfigKeysRegistry fails for a key without a row
// and for a row whose key is gone. The keys of a target's sweeps that
// prober/sweep's settings table bounds (sweep.Settings, Bound) take their
// bound from there and have no row here.
var configKeyRows = map[string]keyRow{
	// The top level.
	"targets":                 {ok: map[string]any{"name": "t%d", "base_url": "http://127.0.0.1:9"}, max: "prober/config.MaxTargets"},
	"modules":                 {ok: map[string]any{}, max: "prober/config.MaxModules"},
	"probe_allowed_targets":   {ok: "http://h%d.example/", max: "prober/config.MaxProbeAllowedTargets"},
	"probe_allowed_targets[]": {ok: "http://127.0.0.1:9/%s", max: "prober/config.MaxProbeTargetLen", why: "a URL prefix, parsed and normalised at load"},
	"discovery":               {ok: map[string]any{"name": "d%d", "max_targets": 1, "static_configs": []any{map[string]any{"targets": []any{"127.0.0.1:9"}}}}, max: "prober/config.MaxDiscoveryEntries"},

	// global.
	"global.timeout":           {max: "prober/config.MaxTimeout", min: "0"},
	"global.ttft_timeout":      {max: "prober/config.MaxTimeout", min: "0"},
	"global.stall_timeout":     {max: "prober/config.MaxTimeout", min: "0"},
	"global.goodput_objective": {max: "1", min: "0", why: "a share of requests: 0 < x < 1"},
	"global.max_rate":          {max: "prober/arrival.MaxRate", min: "0"},

	// An SLO (global.slo, a target's or module's slo, a sweep's goodput):
	// each threshold at most the timeout, itself at most MaxTimeout.
	"slo.ttft": {max: "prober/config.MaxTimeout", min: "0"},
	"slo.tpot": {max: "prober/config.MaxTimeout", min: "0"},
	"slo.e2el": {max: "prober/config.MaxTimeout", min: "0"},
	"slo.ttfa": {max: "prober/config.MaxTimeout", min: "0"},

	// A target (targets[], a discovery entry's template).
	"target.name":                  {why: whyName},
	"target.base_url":              {why: whyURL},
	"target.api":                   {why: whyEnum},
	"target.batch_size":            {max: "prober/client.MaxInputs", min: "0"},
	"target.rerank_path":           {why: whyEnum},
	"target.model":                 {why: whyString},
	"target.engine":                {why: whyEnum},
	"target.api_key_file":          {why: whyPath},
	"target.api_key_env":           {why: whyName},
	"target.metrics_url":           {why: whyURL},
	"target.goodput_objective":     {max: "1", min: "0", why: "a share of requests: 0 < x < 1"},
	"target.timeout":               {max: "prober/config.MaxTimeout", min: "0"},
	"target.ttft_timeout":          {max: "prober/config.MaxTimeout", min: "0"},
	"target.stall_timeout":         {max: "prober/config.MaxTimeout", min: "0"},
	"target.max_body_bytes":        {max: "prober/config.MaxResponseBodyBytes", min: "0"},
	"target.probes":                {ok: map[string]any{"name": "p%d", "rate": 1}, max: "prober/config.MaxProbesPerTarget"},
	"target.max_sweep_rate":        {max: "prober/arrival.MaxRate", min: "0"},
	"target.sweeps":                {ok: map[string]any{"name": "s%d", "every": "24h", "rates": []any{1}}, max: "prober/config.MaxSweepsPerTarget"},
	"target.labels":                {ok: "v", max: "prober/config.MaxTargetLabels"},
	"target.labels.*":              {ok: "%s", max: "prober/config.MaxTargetLabelValueLen", why: "a label value"},
	"target.cost_per_hour":         {max: "prober/knob.MaxCostPerHour", min: "0"},
	"target.gpu_metrics_url":       {why: whyURL},
	"target.gpu_selector":          {ok: `a="%s"`, with: map[string]any{"gpu_metrics_url": "http://127.0.0.1:9/metrics"}, max: "prober/gpusel.MaxBytes", why: "a label selector, parsed at load"},
	"target.trace_sample_ratio":    {max: "1", min: "0", why: "a share of requests: in (0, 1]"},
	"target.http_config":           {why: whyExternal},
	"target.attribution_headers":   {ok: "x-h%d", max: "prober/client.MaxAttributionHeaders"},
	"target.attribution_headers[]": {why: "a header name: validated as one, refused otherwise"},

	// A target's probes.
	"target.probes[].name":                {why: whyName},
	"target.probes[].rate":                {max: "prober/arrival.MaxRate", min: "prober/config.MinProbeRate"},
	"target.probes[].arrival":             {why: whyEnum},
	"target.probes[].burstiness":          {max: "prober/arrival.MaxBurstiness", min: "prober/arrival.MinBurstiness", with: map[string]any{"arrival": "gamma"}},
	"target.probes[].max_concurrency":     {max: "prober/config.MaxProbeConcurrency", min: "1"},
	"target.probes[].seed":                {why: whySeed},
	"target.probes[].prompt_nonce":        {max: "prober/config.MaxPromptNonce"},
	"target.probes[].answer_checks.set":   {why: whyPath + " (or builtin)"},
	"target.probes[].answer_checks.every": {max: "prober/config.MaxAnswerCheckEvery", min: "prober/config.MinAnswerCheckEvery", with: map[string]any{"set": "builtin", "../rate": nil}},

	// A target's scheduled sweeps: the keys prober/sweep's settings table
	// does not bound, and the schedule's.
	"target.sweeps[].name":            {why: whyName},
	"target.sweeps[].rates":           {max: "prober/arrival.MaxRate", min: "prober/sweep.MinRate"},
	"target.sweeps[].concurrency":     {ok: 1, with: map[string]any{"rates": nil}, max: "prober/sweep.MaxLevels"},
	"target.sweeps[].arrival":         {why: whyEnum},
	"target.sweeps[].input_len":       {max: "prober/workload.MaxLength", min: "0", with: map[string]any{"output_len": 8}},
	"target.sweeps[].output_len":      {max: "prober/workload.MaxLength", min: "0", with: map[string]any{"input_len": 8}},
	"target.sweeps[].prefix_len":      {max: "prober/workload.MaxLength", min: "0"},
	"target.sweeps[].seed":            {why: whySeed},
	"target.sweeps[].prompt_nonce":    {why: whySeed, min: "0"},
	"target.sweeps[].sweep_mode":      {why: whyEnum},
	"target.sweeps[].answer_checks":   {why: whyPath + " (or builtin)"},
	"target.sweeps[].every":           {why: "an interval: a longer one runs the sweep less often", min: "prober/config.MinSweepInterval"},
	"target.sweeps[].cron":            {why: "a cron expression, parsed at load"},
	"target.sweeps[].jitter":          {why: "below every (refused at or above it)", min: "0"},
	"target.sweeps[].retention.count": {why: "how many run directories are kept on disk: each run is bounded by the sweep's settings; the count allocates nothing", min: "0"},
	"target.sweeps[].retention.age":   {why: "an age limit: a longer one keeps more of the run directories count allows", min: "0"},

	// A workload (a probe's, a module's, a sweep's).
	"workload.prefix_tokens":                           {max: "prober/workload.MaxLength", min: "0"},
	"workload.ignore_eos":                              {why: whyBool},
	"workload.input_tokens.dist":                       {why: whyEnum},
	"workload.input_tokens.value":                      {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"dist": "fixed"}},
	"workload.input_tokens.range_ratio":                {max: "1", min: "0", why: "a ratio in [0, 1)", with: map[string]any{"dist": "uniform", "value": 8}},
	"workload.input_tokens.min":                        {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"dist": "uniform", "max": 16}},
	"workload.input_tokens.max":                        {ok: 8, max: "prober/workload.MaxLength", with: map[string]any{"dist": "uniform", "min": 1}},
	"workload.input_tokens.median":                     {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"dist": "lognormal", "sigma": 1, "max": 1 << 20}},
	"workload.input_tokens.sigma":                      {ok: 1, why: "a lognormal's spread: every draw is clamped to max (<= workload.MaxLength)", min: "0", with: map[string]any{"dist": "lognormal", "median": 8, "max": 64}},
	"workload.input_tokens.choices":                    {why: whyFileCap},
	"workload.input_tokens.choices[].value":            {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"weight": 1, "../dist": "choice"}},
	"workload.input_tokens.choices[].weight":           {ok: 1, why: "a relative weight (finite, > 0), normalised by the sum", min: "0", with: map[string]any{"value": 8, "../dist": "choice"}},
	"workload.output_tokens.dist":                      {why: whyEnum},
	"workload.output_tokens.value":                     {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"dist": "fixed"}},
	"workload.output_tokens.range_ratio":               {max: "1", min: "0", why: "a ratio in [0, 1)", with: map[string]any{"dist": "uniform", "value": 8}},
	"workload.output_tokens.min":                       {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"dist": "uniform", "max": 16}},
	"workload.output_tokens.max":                       {ok: 8, max: "prober/workload.MaxLength", with: map[string]any{"dist": "uniform", "min": 1}},
	"workload.output_tokens.median":                    {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"dist": "lognormal", "sigma": 1, "max": 1 << 20}},
	"workload.output_tokens.sigma":                     {ok: 1, why: "a lognormal's spread: every draw is clamped to max (<= workload.MaxLength)", min: "0", with: map[string]any{"dist": "lognormal", "median": 8, "max": 64}},
	"workload.output_tokens.choices":                   {why: whyFileCap},
	"workload.output_tokens.choices[].value":           {ok: 8, max: "prober/workload.MaxLength", min: "1", with: map[string]any{"weight": 1, "../dist": "choice"}},
	"workload.output_tokens.choices[].weight":          {ok: 1, why: "a relative weight (finite, > 0), normalised by the sum", min: "0", with: map[string]any{"value": 8, "../dist": "choice"}},
	"workload.multi_turn.turns.dist":                   {why: whyEnum},
	"workload.multi_turn.turns.value":                  {namesMapping: true, ok: 2, max: "prober/workload.MaxTurns", min: "1", with: map[string]any{"dist": "fixed", "^api": "chat"}},
	"workload.multi_turn.turns.range_ratio":            {max: "1", min: "0", why: "a ratio in [0, 1)", with: map[string]any{"dist": "uniform", "value": 4, "^api": "chat"}},
	"workload.multi_turn.turns.min":                    {ok: 2, max: "prober/workload.MaxTurns", min: "1", with: map[string]any{"dist": "uniform", "max": 4, "^api": "chat"}},
	"workload.multi_turn.turns.max":                    {namesMapping: true, ok: 2, max: "prober/workload.MaxTurns", with: map[string]any{"dist": "uniform", "min": 1, "^api": "chat"}},
	"workload.multi_turn.turns.median":                 {ok: 2, max: "prober/workload.MaxTurns", min: "1", with: map[string]any{"dist": "lognormal", "sigma": 1, "max": 64, "^api": "chat"}},
	"workload.multi_turn.turns.sigma":                  {ok: 1, why: "a lognormal's spread: every draw is clamped to max (<= workload.MaxTurns)", min: "0", with: map[string]any{"dist": "lognormal", "median": 2, "max": 8, "^api": "chat"}},
	"workload.multi_turn.turns.choices":                {why: whyFileCap},
	"workload.multi_turn.turns.choices[].value":        {namesMapping: true, ok: 2, max: "prober/workload.MaxTurns", min: "1", with: map[string]any{"weight": 1, "../dist": "choice", "^api": "chat"}},
	"workload.multi_turn.turns.choices[].weight":       {ok: 1, why: "a relative weight (finite, > 0), normalised by the sum", min: "0", with: map[string]any{"value": 2, "../dist": "choice", "^api": "chat"}},
	"workload.multi_turn.think_time":                   {max: "prober/workload.MaxThinkTime", min: "0", with: map[string]any{"turns": 2, "^api": "chat"}},
	"workload.multi_turn.max_context_tokens":           {max: "prober/workload.MaxLength", min: "0", with: map[string]any{"turns": 2, "^api": "chat"}},
	"workload.request.temperature":                     {why: whySampling, min: "0"},
	"workload.request.top_p":                           {max: "1", min: "0", why: "a probability in (0, 1]"},
	"workload.request.seed":                            {why: whySeed},
	"workload.request.stop":                            {ok: "s%d", max: "prober/workload.MaxStops"},
	"workload.request.stop[]":                          {ok: "%s", max: "prober/workload.MaxStopBytes", why: "a stop string"},
	"workload.request.min_tokens":                      {max: "prober/workload.MaxLength", min: "0"},
	"workload.request.reasoning_effort":                {why: whyEnum},
	"workload.request.chat_template_kwargs":            {max: "prober/workload.MaxExtraBodyBytes", why: "encoded with extra_body, bounded together"},
	"workload.request.chat_template_kwargs.*":          {max: "prober/workload.MaxExtraBodyBytes", why: "any JSON value, bounded by its encoding"},
	"workload.request.extra_body":                      {max: "prober/workload.MaxExtraBodyBytes", why: "encoded; keys that multiply server work (n, best_of, ...) refused"},
	"workload.request.extra_body.*":                    {max: "prober/workload.MaxExtraBodyBytes", why: "any JSON value, bounded by its encoding"},
	"workload.request.features":                        {ok: map[string]any{"kind": "lora", "model": "a%d", "share": 0.01}, max: "prober/workload.MaxFeatures"},
	"workload.request.features[].kind":                 {why: whyEnum},
	"workload.request.features[].share":                {ok: 1, max: "1", min: "0", why: whyShare, with: map[string]any{"kind": "no_stream"}},
	"workload.request.features[].top_logprobs":         {max: "prober/workload.MaxTopLogprobs", min: "0", with: map[string]any{"kind": "logprobs", "share": 1}},
	"workload.request.features[].name":                 {why: whyString + " (a LoRA adapter's name)"},
	"workload.request.features[].schema":               {max: "prober/workload.MaxSchemaBytes", why: "a JSON schema: its encoding, nesting (MaxSchemaDepth) and checking cost (MaxCheckCost) bounded"},
	"workload.request.features[].schema.*":             {max: "prober/workload.MaxSchemaBytes", why: "part of a JSON schema"},
	"workload.request.features[].schema_file":          {why: whyPath},
	"workload.request.features[].model":                {why: whyString + " (a LoRA adapter's model)"},
	"workload.request.features[].tools":                {ok: map[string]any{"name": "t%d"}, with: map[string]any{"kind": "tools", "share": 1}, max: "prober/workload.MaxTools"},
	"workload.request.features[].tools[].name":         {why: whyName},
	"workload.request.features[].tools[].description":  {ok: "%s", with: map[string]any{"name": "t", "../kind": "tools", "../share": 1}, max: "prober/workload.MaxToolDescriptionBytes", why: "a tool's description"},
	"workload.request.features[].tools[].parameters":   {max: "prober/workload.MaxSchemaBytes", why: "a JSON schema, bounded as a json_schema feature's"},
	"workload.request.features[].tools[].parameters.*": {max: "prober/workload.MaxSchemaBytes", why: "part of a JSON schema"},
	"workload.request.features[].tool_choice":          {why: whyEnum + " (or a tool's name)"},
	"workload.request.features[].count":                {ok: 1, max: "prober/workload.MaxImages", min: "0", with: imagesWith},
	"workload.request.features[].width":                {max: "prober/workload.MaxImageWidth", min: "0", with: imagesWith},
	"workload.request.features[].height":               {max: "prober/workload.MaxImageHeight", min: "0", with: imagesWith},
	"workload.request.features[].format":               {why: whyEnum},
	"workload.request.features[].distinct":             {max: "prober/workload.MaxImageDistinct", min: "0", with: imagesWith},
	"workload.dataset.path":                            {why: whyPath},
	"workload.dataset.format":                          {why: whyEnum},
	"workload.dataset.sampling":                        {why: whyEnum},
	"workload.dataset.max_entries":                     {max: "prober/workload.MaxDatasetEntries", min: "0", with: map[string]any{"path": "dataset.jsonl", "../input_tokens": nil}},
	"workload.trace.path":                              {why: whyPath},
	"workload.trace.speeds":                            {ok: 1, with: traceWith, only: "sweeps[]", max: "prober/workload.MaxTraceSpeeds"},
	"workload.trace.speeds[]":                          {max: "prober/sweep.MaxTraceSpeed", min: "0", with: traceWith, only: "sweeps[]"},
	"workload.trace.block_size":                        {max: "prober/workload.MaxTraceBlockSize", min: "0", with: traceWith, only: "sweeps[]"},

	// GET /probe's modules.
	"modules.*.api":                   {why: whyEnum},
	"modules.*.model":                 {why: whyString},
	"modules.*.engine":                {why: whyEnum},
	"modules.*.api_key_file":          {why: whyPath},
	"modules.*.api_key_env":           {why: whyName},
	"modules.*.timeout":               {max: "prober/config.MaxTimeout", min: "0"},
	"modules.*.ttft_timeout":          {max: "prober/config.MaxTimeout", min: "0"},
	"modules.*.stall_timeout":         {max: "prober/config.MaxTimeout", min: "0"},
	"modules.*.max_body_bytes":        {max: "prober/config.MaxResponseBodyBytes", min: "0"},
	"modules.*.http_config":           {why: whyExternal},
	"modules.*.attribution_headers":   {ok: "x-h%d", max: "prober/client.MaxAttributionHeaders"},
	"modules.*.attribution_headers[]": {why: "a header name: validated as one, refused otherwise"},
	"modules.*.seed":                  {why: whySeed},
	"modules.*.prompt_nonce":          {max: "prober/config.MaxPromptNonce"},

	// Service discovery.
	"discovery[].name":                  {why: whyName},
	"discovery[].max_targets":           {max: "prober/config.MaxDiscoveredTargets", min: "1"},
	"discovery[].relabel_configs":       {why: whyFileCap + " (each one is applied once per discovered label set, RE2 regexps)"},
	"discovery[].relabel_configs[]":     {why: whyExternal},
	"discovery[].static_configs":        {why: whyExternal + "; targets bounded by max_targets"},
	"discovery[].file_sd_configs":       {why: whyExternal + "; files capped at prober/config.MaxSDBytes"},
	"discovery[].http_sd_configs":       {why: whyExternal + "; answers capped at prober/config.MaxSDBytes, no redirect"},
	"discovery[].dns_sd_configs":        {why: whyExternal + "; targets bounded by max_targets"},
	"discovery[].kubernetes_sd_configs": {why: whyExternal + "; targets bounded by max_targets"},

	// tracing.
	"tracing.endpoint":       {why: whyURL},
	"tracing.protocol":       {why: whyEnum},
	"tracing.insecure":       {why: whyBool},
	"tracing.sample_ratio":   {max: "1", min: "prober/config.MinTracingSampleRatio", why: "a share of requests: in (0, 1]", with: map[string]any{"endpoint": "127.0.0.1:4318"}},
	"tracing.headers":        {ok: "v", with: map[string]any{"endpoint": "127.0.0.1:4318"}, max: "prober/config.MaxTracingHeaders"},
	"tracing.headers.*":      {ok: "%s", with: map[string]any{"../endpoint": "127.0.0.1:4318"}, max: "prober/config.MaxTracingHeaderBytes", why: "a header value"},
	"tracing.header_files":   {max: "prober/config.MaxTracingHeaders"},
	"tracing.header_files.*": {max: "prober/config.MaxTracingHeaderBytes", why: "a file read through prober/capfile at this cap"},
	"tracing.tls_config":     {why: whyExternal},
	"tracing.timeout":        {max: "prober/config.MaxTracingTimeout", min: "0", with: map[string]any{"endpoint": "127.0.0.1:4318"}},
}

// sweepSetting returns the settings-table row of a target's sweep key
// ("target.sweeps[].duration", "target.sweeps[].concurrency[]"), if the
// table has a row with that spec key.
func sweepSetting(row string) (sweep.Setting, bool) {
	key, ok := strings.CutPrefix(row, "target.sweeps[].")
	if !ok {
		return sweep.Setting{}, false
	}
	key = strings.TrimSuffix(key, "[]")
	for _, s := range sweep.Settings() {
		if s.Key == key && s.Surfaces&sweep.SurfaceSpec != 0 {
			return s, true
		}
	}
	return sweep.Setting{}, false
}

// numericKinds are the kinds the registry's generated checks set.
var numericKinds = map[string]bool{kindInt: true, kindFloat: true, kindDuration: true, kindBytes: true}

// keyBound is a row's bound as the generated checks use it.
type keyBound struct {
	max, min       float64
	hasMax, hasMin bool
	from           string // where it comes from, for messages
}

// boundValue resolves a row's max or min: a number, or a constant of the
// module evaluated from its source.
func boundValue(consts map[string]*constSource, s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, nil
	}
	c, ok := consts[s]
	if !ok {
		return 0, fmt.Errorf("%s is not a constant of the module", s)
	}
	v, err := evalConst(consts, c)
	return v.v, err
}

// TestConfigKeysRegistry is the registry of configuration keys (issue 34
// Deliver 9): every key a user can set in the daemon's YAML (configKeys,
// by reflection over config.Config) has a row in configKeyRows or a
// bounded row of prober/sweep's settings table, and every row a key. A
// row's bound is a constant of the module or a number it says why of; a
// row without a bound says why none is needed. For each number and
// duration with a bound, at every place the key appears, it writes a
// minimal valid configuration (which must load), then the same with the
// key just beyond the bound (and just below its lowest value, where it
// has one), each of which config.Parse must refuse with an error naming
// the key.
func TestConfigKeysRegistry(t *testing.T) {
	consts := readConsts(t)
	keys := configKeys()
	rowKinds, rowPaths := map[string]string{}, map[string][]string{}
	for _, k := range keys {
		rowKinds[k.row] = k.kind
		rowPaths[k.row] = append(rowPaths[k.row], k.path)
	}
	bounds := map[string]keyBound{}
	var rows []string
	for r := range rowKinds {
		rows = append(rows, r)
	}
	sort.Strings(rows)
	for _, r := range rows {
		kind := rowKinds[r]
		row, listed := configKeyRows[r]
		if s, ok := sweepSetting(r); ok && kind != kindList && s.Bound.HasMax {
			if listed {
				t.Errorf("configKeyRows[%q]: prober/sweep's settings table bounds this key (%s); remove the row", r, s.Field)
			}
			// The table's lowest values are the CLI's: in a spec, zero
			// (and warmups' -1) stand for the default, so only the
			// upper bound is generated.
			bounds[r] = keyBound{max: s.Bound.Max, hasMax: true, from: "prober/sweep settings table, " + s.Field}
			continue
		}
		if !listed {
			t.Errorf("%s (a %s key at %s): no row in internal/archtest's configKeyRows: add one with its bound (a constant of the module, "+
				"enforced at load) or why it needs none (docs/security.md, \"Configuration keys\")", r, kind, strings.Join(rowPaths[r], ", "))
			continue
		}
		if row.max == "" && row.why == "" {
			t.Errorf("configKeyRows[%q]: give its bound (max) or why it needs none", r)
		}
		var b keyBound
		if row.max != "" {
			if _, err := strconv.ParseFloat(row.max, 64); err == nil && row.why == "" {
				t.Errorf("configKeyRows[%q]: the literal bound %s needs a why", r, row.max)
			}
			v, err := boundValue(consts, row.max)
			if err != nil {
				t.Errorf("configKeyRows[%q]: bound: %v", r, err)
				continue
			}
			b.max, b.hasMax, b.from = v, true, row.max
		}
		if row.min != "" {
			v, err := boundValue(consts, row.min)
			if err != nil {
				t.Errorf("configKeyRows[%q]: min: %v", r, err)
				continue
			}
			b.min, b.hasMin = v, true
		}
		sized := (kind == kindList || kind == kindMap || kind == kindString) && b.hasMax && row.ok != nil
		if (b.hasMax || b.hasMin) && numericKinds[kind] || sized {
			bounds[r] = b
		}
	}
	for r := range configKeyRows {
		if _, ok := rowKinds[r]; !ok {
			t.Errorf("configKeyRows[%q]: no such key in config.Config any more; remove the row", r)
		}
	}

	dir := t.TempDir()
	for name, body := range map[string]string{
		"dataset.jsonl": `{"prompt": "hello there", "output_tokens": 4}` + "\n",
		"trace.jsonl": `{"timestamp": 1000, "input_length": 1200, "output_length": 8, "hash_ids": [0, 1, 2]}` + "\n" +
			`{"timestamp": 2000, "input_length": 1200, "output_length": 8, "hash_ids": [0, 1, 3]}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "llmprobe.yml")
	parse := func(doc map[string]any) error {
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = config.Parse(data, file)
		return err
	}
	checked := 0
	for _, k := range keys {
		b, ok := bounds[k.row]
		if !ok {
			continue
		}
		row := configKeyRows[k.row]
		var okValue any
		if !numericKinds[k.kind] {
			okValue = sizedValue(k.kind, row.ok, 1)
		} else if row.ok != nil {
			okValue = row.ok
			if k.typ == reflect.TypeFor[config.Rates]() {
				okValue = []any{row.ok}
			}
		}
		base, err := keyDoc(k.path, okValue, row.with)
		if err != nil {
			t.Errorf("%s: %v", k.path, err)
			continue
		}
		err = parse(base)
		if row.only != "" && !strings.Contains(k.path, row.only) {
			if err == nil {
				t.Errorf("%s: the check's context %v loads here, so the key applies: drop the row's only (%q)", k.path, row.with, row.only)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: the minimal configuration the check starts from does not load (fix the row's with): %v", k.path, err)
			continue
		}
		try := func(what string, v any) {
			doc, err := keyDoc(k.path, v, row.with)
			if err != nil {
				t.Errorf("%s: %v", k.path, err)
				return
			}
			err = parse(doc)
			switch {
			case err == nil:
				data, _ := yaml.Marshal(doc)
				t.Errorf("%s = %v (%s %s) loads: enforce the bound in prober/config's validation with an error naming the key\n%s", k.path, v, what, b.from, data)
			case !namesKey(err.Error(), k.path, row.namesMapping):
				t.Errorf("%s = %v (%s %s) is refused, but the error does not name the key: %v", k.path, v, what, b.from, err)
			}
			checked++
		}
		switch {
		case !numericKinds[k.kind]:
			try("beyond", sizedValue(k.kind, row.ok, int(b.max)+1))
		case b.hasMax:
			try("beyond", keyValue(k, b.max, +1))
		}
		if b.hasMin && numericKinds[k.kind] {
			try("below", keyValue(k, b.min, -1))
		}
	}
	t.Logf("%d keys (%d rows), %d numbers and durations, %d refusals generated", len(keys), len(rowKinds), countNumeric(keys), checked)

	// docs/security.md's counts.
	type count struct{ rows, paths, numeric int }
	counts := map[string]*count{}
	order := []string{"a bound, a constant of the module", "a bound, a number (a share or a ratio: 1)", "a bound of prober/sweep's settings table", "a reason, no bound needed"}
	for _, c := range order {
		counts[c] = &count{}
	}
	for _, r := range rows {
		row, listed := configKeyRows[r]
		c := order[3]
		switch _, tableRow := bounds[r]; {
		case !listed && tableRow:
			c = order[2]
		case row.max != "":
			c = order[0]
			if _, err := strconv.ParseFloat(row.max, 64); err == nil {
				c = order[1]
			}
		}
		counts[c].rows++
		counts[c].paths += len(rowPaths[r])
		if numericKinds[rowKinds[r]] {
			counts[c].numeric += len(rowPaths[r])
		}
	}
	var body strings.Builder
	body.WriteString("| rows with | rows | key paths | of which numbers and durations |\n|---|---|---|---|\n")
	for _, c := range order {
		fmt.Fprintf(&body, "| %s | %d | %d | %d |\n", c, counts[c].rows, counts[c].paths, counts[c].numeric)
	}
	fmt.Fprintf(&body, "| all | %d | %d | %d |\n\n%d refusals are generated and checked at load (beyond a bound, below a lowest value, one entry too many, one byte too long).\n",
		len(rowKinds), len(keys), countNumeric(keys), checked)
	path := filepath.Join(root, "docs", "security.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	newDoc, old, err := replaceBlock(string(doc), keysBegin, keysEnd, body.String())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case *updateBounds:
		if err := os.WriteFile(path, []byte(newDoc), 0o644); err != nil {
			t.Fatal(err)
		}
	case old != body.String():
		t.Errorf("docs/security.md's configuration key counts are stale; regenerate with go test ./internal/archtest -run TestConfigKeysRegistry -update:\n%s", body.String())
	}
}

// Markers of docs/security.md's generated key counts.
const (
	keysBegin = "<!-- configuration keys: counts generated by TestConfigKeysRegistry (go test ./internal/archtest -run TestConfigKeysRegistry -update) -->\n"
	keysEnd   = "<!-- end of the configuration key counts -->\n"
)

func countNumeric(keys []configKey) int {
	n := 0
	for _, k := range keys {
		if numericKinds[k.kind] {
			n++
		}
	}
	return n
}

// keyValue is the value just beyond v (dir +1) or just below it (-1), as
// the key's YAML takes it.
func keyValue(k configKey, v float64, dir int) any {
	var out any
	switch k.kind {
	case kindFloat:
		out = math.Nextafter(v, math.Inf(dir))
	case kindDuration:
		out = time.Duration(int64(v) + int64(dir)).String()
	default:
		switch {
		case dir > 0 && v >= math.MaxInt64:
			out = uint64(v) // MaxInt64 + 1 as a float is 2^63
		default:
			out = int64(v) + int64(dir)
		}
	}
	if k.typ == reflect.TypeFor[config.Rates]() {
		return []any{out}
	}
	return out
}

// sizedValue is a list or a mapping of n entries made from the template
// tmpl, or a string of n bytes (tmpl's %s padded).
func sizedValue(kind string, tmpl any, n int) any {
	switch kind {
	case kindList:
		l := make([]any, n)
		for i := range l {
			l[i] = fillTemplate(tmpl, i)
		}
		return l
	case kindMap:
		m := make(map[string]any, n)
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = fillTemplate(tmpl, i)
		}
		return m
	}
	t := tmpl.(string)
	return fmt.Sprintf(t, strings.Repeat("a", max(1, n-(len(t)-2))))
}

// fillTemplate is entry i of a template: %d in strings is i, a number
// i+1, a mapping's values alike.
func fillTemplate(tmpl any, i int) any {
	switch t := tmpl.(type) {
	case string:
		if strings.Contains(t, "%d") {
			return fmt.Sprintf(t, i)
		}
		return t
	case int:
		return i + 1
	case float64:
		return float64(i + 1)
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, v := range t {
			m[k] = fillTemplate(v, i)
		}
		return m
	}
	return tmpl
}

// concretePath is a key's path as an error names it: the first entry of
// each list, the mapping key "k".
func concretePath(path string) string {
	return strings.ReplaceAll(strings.ReplaceAll(path, "[]", "[0]"), ".*", ".k")
}

var lastIndexRE = regexp.MustCompile(`\[0\]$`)

// namesKey reports whether an error names the key at path: its whole
// path, or the path of an enclosing mapping followed by the rest of the
// key's names as words ("targets[0].sweeps[0]: ... dataset: max_entries:",
// as prober/sweep words its errors). With mapping, the key's own name may
// be left out (the error names its mapping).
func namesKey(msg, path string, mapping bool) bool {
	p := lastIndexRE.ReplaceAllString(concretePath(path), "")
	if strings.Contains(msg, p) {
		return true
	}
	elems := strings.Split(p, ".")
	if mapping {
		elems = elems[:len(elems)-1]
		for len(elems) > 1 && strings.HasSuffix(elems[len(elems)-1], "[0]") {
			elems = elems[:len(elems)-1] // a distribution's choices[0]: the distribution
		}
		if strings.Contains(msg, strings.Join(elems, ".")) {
			return true
		}
	}
	lower := strings.ToLower(msg)
	for i := len(elems) - 1; i > 0; i-- {
		if !strings.Contains(msg, strings.Join(elems[:i], ".")) {
			continue
		}
		all := true
		for _, e := range elems[i:] {
			e = strings.ToLower(strings.TrimSuffix(e, "[0]"))
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(e) + `\b`).MatchString(lower) {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}

// skeletons are the entries a check's configuration starts from: the
// least a target, a probe, a sweep and a discovery entry need.
func skeleton(list string) map[string]any {
	switch list {
	case "targets":
		return map[string]any{"name": "t", "base_url": "http://127.0.0.1:9"}
	case "probes":
		return map[string]any{"name": "p", "rate": 1}
	case "sweeps":
		return map[string]any{"name": "s", "every": "24h", "rates": []any{1}}
	case "discovery":
		return map[string]any{"name": "d", "static_configs": []any{map[string]any{"targets": []any{"127.0.0.1:9"}}}}
	}
	return map[string]any{}
}

// keyDoc builds a minimal configuration that sets the key at path to v
// (nil: leaves it out), with the row's context around it.
func keyDoc(path string, v any, with map[string]any) (map[string]any, error) {
	root := map[string]any{}
	segs := strings.Split(strings.ReplaceAll(path, ".*", ".k"), ".")
	cur := root
	stack := []map[string]any{root}
	var target map[string]any
	for i, seg := range segs {
		name, list := strings.CutSuffix(seg, "[]")
		if i == len(segs)-1 {
			break
		}
		var child map[string]any
		if list {
			l, _ := cur[name].([]any)
			if len(l) == 0 {
				l = []any{skeleton(name)}
				cur[name] = l
			}
			child = l[0].(map[string]any)
		} else {
			child, _ = cur[name].(map[string]any)
			if child == nil || name == "input_tokens" || name == "output_tokens" {
				child = map[string]any{}
				cur[name] = child
			}
			if name == "workload" && i > 0 && segs[i-1] == "sweeps[]" {
				// A sweep's workload gives both lengths.
				child["input_tokens"] = map[string]any{"dist": "fixed", "value": 8}
				child["output_tokens"] = map[string]any{"dist": "fixed", "value": 8}
			}
		}
		if name == "targets" || name == "target" || (i > 0 && segs[i-1] == "modules") {
			target = child
		}
		cur = child
		stack = append(stack, cur)
	}
	if root["targets"] == nil && root["modules"] == nil && root["discovery"] == nil {
		root["targets"] = []any{skeleton("targets")}
	}
	for k, val := range with {
		m := stack[len(stack)-1]
		switch {
		case strings.HasPrefix(k, "^"):
			if target == nil {
				return nil, fmt.Errorf("with %q: no enclosing target or module", k)
			}
			m, k = target, k[1:]
		default:
			up := len(stack) - 1
			for strings.HasPrefix(k, "../") {
				if up == 0 {
					return nil, fmt.Errorf("with %q: above the top", k)
				}
				up, k = up-1, k[3:]
			}
			m = stack[up]
		}
		if val == nil {
			delete(m, k)
		} else {
			m[k] = val
		}
	}
	if v != nil {
		name, list := strings.CutSuffix(segs[len(segs)-1], "[]")
		if list {
			v = []any{v}
		}
		cur[name] = v
	}
	return root, nil
}

// TestConfigKeysWalk pins what configKeys finds: keys through structs,
// lists, mappings, pointers, inlined and embedded structs, the anchors'
// rows and discovery's mechanisms.
func TestConfigKeysWalk(t *testing.T) {
	got := map[string]configKey{}
	for _, k := range configKeys() {
		got[k.path] = k
	}
	for _, w := range []struct{ path, row, kind string }{
		{"targets", "targets", kindList},
		{"targets[].probes[].rate", "target.probes[].rate", kindFloat},
		{"targets[].probes[].answer_checks.every", "target.probes[].answer_checks.every", kindDuration},         // a pointer
		{"targets[].sweeps[].every", "target.sweeps[].every", kindDuration},                                     // inlined SweepSpec beside it
		{"targets[].sweeps[].num_prompts", "target.sweeps[].num_prompts", kindInt},                              // inlined SweepSpec
		{"targets[].sweeps[].rates", "target.sweeps[].rates", kindFloat},                                        // Rates: a list of numbers
		{"discovery[].target.probes[].workload.multi_turn.turns.max", "workload.multi_turn.turns.max", kindInt}, // embedded LengthSpec
		{"modules.*.workload.request.features[].tools[].description", "workload.request.features[].tools[].description", kindString},
		{"modules.*.timeout", "modules.*.timeout", kindDuration},
		{"global.slo.tpot", "slo.tpot", kindDuration},
		{"targets[].max_body_bytes", "target.max_body_bytes", kindBytes},
		{"targets[].labels", "target.labels", kindMap},
		{"targets[].http_config", "target.http_config", kindExternal},
		{"discovery[].file_sd_configs", "discovery[].file_sd_configs", kindExternal},
		{"tracing.headers.*", "tracing.headers.*", kindString},
	} {
		k, ok := got[w.path]
		if !ok || k.row != w.row || k.kind != w.kind {
			t.Errorf("configKeys()[%q] = %+v (found %v), want row %q kind %s", w.path, k, ok, w.row, w.kind)
		}
	}
}

// TestNamesKey pins when a refusal names its key.
func TestNamesKey(t *testing.T) {
	for _, c := range []struct {
		msg, path string
		mapping   bool
		want      bool
	}{
		{"f.yml:3: targets[0].probes[0].rate: must be > 0, got -1", "targets[].probes[].rate", false, true},
		{"f.yml:3: targets[0].sweeps[0]: Workload.Dataset: dataset: max_entries: must be 0 to 200000", "targets[].sweeps[].workload.dataset.max_entries", false, true},
		{"f.yml:3: modules.k.workload.input_tokens: choices[0].value must be >= 1", "modules.*.workload.input_tokens.choices[].value", false, true},
		{"f.yml:3: targets[0].probes[0]: must be > 0", "targets[].probes[].rate", false, false},
		{"f.yml:3: targets[0].probes[0].workload.multi_turn.turns: can draw 65 turns", "targets[].probes[].workload.multi_turn.turns.max", false, false},
		{"f.yml:3: targets[0].probes[0].workload.multi_turn.turns: can draw 65 turns", "targets[].probes[].workload.multi_turn.turns.max", true, true},
		{"f.yml:3: targets[0].name: required", "targets[].timeout", false, false},
	} {
		if got := namesKey(c.msg, c.path, c.mapping); got != c.want {
			t.Errorf("namesKey(%q, %q, %v) = %v, want %v", c.msg, c.path, c.mapping, got, c.want)
		}
	}
}

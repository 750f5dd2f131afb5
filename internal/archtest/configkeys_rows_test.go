package archtest

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
	"target.server_timing":         {why: whyBool},
	"target.slo_headers":           {why: whyBool},
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
	"target.sweeps[].rates":           {ok: 1, max: "prober/sweep.MaxLevels"},
	"target.sweeps[].rates[]":         {max: "prober/arrival.MaxRate", min: "prober/sweep.MinRate"},
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
	"workload.multi_turn.session_header":               {why: "a header name: validated as one (and not one llmprobe sets itself), refused otherwise"},
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
	"workload.request.features[].name":                 {why: whyString + " (a json_schema feature's name in response_format)"},
	"workload.request.features[].schema":               {max: "prober/workload.MaxSchemaBytes", why: "a JSON schema: its encoding, nesting (MaxSchemaDepth) and checking cost (MaxCheckCost) bounded"},
	"workload.request.features[].schema.*":             {max: "prober/workload.MaxSchemaBytes", why: "part of a JSON schema"},
	"workload.request.features[].schema_file":          {why: whyPath},
	"workload.request.features[].model":                {why: whyString + " (a LoRA adapter's name, sent as the request's model)"},
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

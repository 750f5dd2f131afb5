// llmprobe monitoring mixin (monitoring-mixins layout).
//
// The rule files in ../rules and the generated dashboards in ../dashboards
// are the source of truth; `go run ./dashboards/gen` copies them into this
// directory (rules/, dashboards/, rules.libsonnet, dashboards.libsonnet), so
// that the directory alone is vendorable: no import leaves it. This mixin
// parses the copies and applies the _config knobs below where the rules
// and dashboards have them. With the default _config its output equals
// rules/ and dashboards/ exactly (rules/mixin_test.go checks it). A knob
// edit whose literal is no longer in the rule files is an evaluation
// error, not a silent no-op. See README.md.
// The rule files, parsed once per import (outside the object, so a _config
// override does not parse them again); sorted by name, as rules.Load reads them.
local ruleFiles = import 'rules.libsonnet';
local dashboardFiles = import 'dashboards.libsonnet';
local groups = std.flattenArrays([f.groups for f in ruleFiles.shared]);
local optionalGroups = std.flattenArrays([f.groups for f in ruleFiles.optional]);

{
  _config+:: {
    // Selector of llmprobe's scrape job(s), read by LLMProbeDown.
    llmprobeSelector: 'job=~"llmprobe"',

    // Goodput burn-rate thresholds (multiples of the error budget rate) of
    // LLMProbeGoodputBudgetBurnFast (1h/5m and 15m/2m windows; also the burn
    // above which LLMProbeTTFTAboveSLO and LLMProbeTPOTAboveSLO stay quiet)
    // and LLMProbeGoodputBudgetBurnSlow (6h/30m windows).
    fastBurnThreshold: 14.4,
    slowBurnThreshold: 6,

    // LLMProbeCanaryRegression: candidate/baseline ratios above which the
    // candidate regressed, the goodput-ratio difference below which it did,
    // and the successful requests each side needs in the 10-minute window.
    canaryTPOTMeanRatio: 1.05,
    canaryITLMeanRatio: 1.05,
    canaryTTFTMeanRatio: 1.10,
    canaryTTFTP99Ratio: 2,
    canaryTPOTP99Ratio: 1.25,
    canaryGoodputDiff: -0.05,
    canaryMinRequests: 200,

    // Capacity: LLMProbeCapacityRegression fires when the last two decided
    // knees both fall below this fraction of the knee's 7-day median;
    // LLMProbeCapacityHeadroomLow when production leaves less than this
    // fraction of the knee.
    capacityRegressionRatio: 0.8,
    capacityHeadroomRatio: 0.15,

    // LLMProbeReplicaOutlier: a replica's TTFT or TPOT p99 at or above this
    // multiple of its service's median, held for replicaOutlierFor; a
    // replica counts (in the median and the alert) from this many successful
    // requests in 10 minutes (the llmprobe.replicas recording rules).
    replicaOutlierRatio: 1.9,
    replicaOutlierFor: '15m',
    replicaMinRequests: 200,
    // LLMProbeAnswerRegression: the pass ratio of judged answer checks
    // (30 minutes) below which it fires, and the judged replies it needs.
    answerPassRatio: 0.9,
    answerMinChecks: 20,
    // LLMProbeClientReadLag: the share of the prober's Go scheduling-latency
    // samples over 1 ms above which it reads late (0.01: the p99 over 1 ms).
    clientReadLagRatio: 0.01,

    // keep_firing_for of every alert that has one (all but LLMProbeDown and
    // LLMProbeAbsent): bridges the gap until LLMProbeDown mutes them.
    keepFiringFor: '10m',

    // Add the opt-in LLMProbeAbsent (rules/optional/llmprobe.absent.yml).
    absentAlert: false,

    // Every alert's runbook_url: %s is the alert name in lower case (the
    // anchor of its section in docs/runbook.md). Point it at your own copy
    // of the runbook.
    runbookURLPattern: 'https://github.com/llmprobe/llmprobe/blob/main/docs/runbook.md#%s',

    // Dashboards: their tags (and the tag of their links to each other),
    // refresh interval, time zone, and the Prometheus data source their
    // datasource variable selects first ('': Grafana's default one).
    dashboardTags: ['llmprobe'],
    dashboardRefresh: '30s',
    dashboardTimezone: 'browser',
    dashboardDatasource: '',

    // Add the opt-in LLMProbeEnergyPerGoodTokenRegression
    // (rules/optional/llmprobe.energy.yml): it fires when the last hour's
    // joules per good output token exceed energyRegressionRatio times their
    // 7-day median while the good token rate is within energyLoadBand of
    // its 7-day median (the same load).
    energyAlert: false,
    energyRegressionRatio: 1.2,
    energyLoadBand: 0.25,
  },

  local isAlertGroup(g) =
    local n = std.length([r for r in g.rules if std.objectHas(r, 'alert')]);
    if n == 0 then false
    else if n == std.length(g.rules) then true
    else error 'mixin: group %s mixes recording rules and alerts' % g.name,

  // Replace the text from by to in s; from must be there (so a rule file
  // edit that removes a knob's literal fails loudly).
  // Numbers as a person writes them (std.toString(0.1) is 0.10000000000000001).
  local fmt(x) = '%g' % x,

  local replace(s, from, to) =
    // (std.strReplace is a builtin; std.findSubstr is slow on long strings.)
    if std.strReplace(s, from, '') == s
    then error 'mixin: %s not found in %s' % [std.toString(from), std.toString(s)]
    else std.strReplace(s, from, to),

  // A numeric knob: pattern holds %s where the rule file writes the literal
  // (e.g. '1.10'). s is kept byte for byte while the knob equals the
  // literal's value, so the default output equals the files.
  local num(s, pattern, literal, value) =
    local from = pattern % literal;
    local checked = replace(s, from, from);
    if std.parseJson(literal) == value then checked
    else std.strReplace(checked, from, pattern % fmt(value)),

  local pct(s, pattern, literal, value) =
    local from = pattern % literal;
    local checked = replace(s, from, from);
    if std.parseJson(literal) == value * 100 then checked
    else std.strReplace(checked, from, pattern % fmt(value * 100)),

  // "a 30-day budget lasts about N days or less" at a burn of x.
  local budgetDays(x) =
    local v = 30 / x;
    if v >= 1.95 then '%d' % std.floor(v + 0.5) else '%.1f' % v,
  local withBudgetDays(r, literal, x) =
    r {
      annotations+: {
        description: replace(
          r.annotations.description,
          'lasts about %s days' % literal,
          'lasts about %s days' % budgetDays(x)
        ),
      },
    },

  local canaryPhrase(c) =
    'above %s for tpot_mean, %s for itl_mean, %s for ttft_mean, %s for tpot_p99, %s for ttft_p99; a goodput-ratio difference below %s for goodput' % [
      fmt(c.canaryTPOTMeanRatio),
      fmt(c.canaryITLMeanRatio),
      fmt(c.canaryTTFTMeanRatio),
      fmt(c.canaryTPOTP99Ratio),
      fmt(c.canaryTTFTP99Ratio),
      fmt(c.canaryGoodputDiff),
    ],
  local canaryDefault =
    'above 1.05 for tpot_mean and itl_mean, 1.10 for ttft_mean, 1.25 for tpot_p99, 2 for ttft_p99; a goodput-ratio difference below -0.05 for goodput',

  // Per-alert edits: function (config, rule) -> rule.
  local withExpr(r, f) = r { expr: f(r.expr) },
  local edits = {
    LLMProbeGoodputBudgetBurnFast(c, r):
      withBudgetDays(withExpr(r, function(e) num(e, '> %s', '14.4', c.fastBurnThreshold)), '2', c.fastBurnThreshold),
    LLMProbeGoodputBudgetBurnSlow(c, r):
      withBudgetDays(withExpr(r, function(e) num(e, '> %s', '6', c.slowBurnThreshold)), '5', c.slowBurnThreshold),
    LLMProbeTTFTAboveSLO(c, r):
      withExpr(r, function(e) num(e, 'ratio_rate5m > %s', '14.4', c.fastBurnThreshold)),
    LLMProbeTPOTAboveSLO(c, r):
      withExpr(r, function(e) num(e, 'ratio_rate5m > %s', '14.4', c.fastBurnThreshold)),
    LLMProbeDown(c, r):
      withExpr(r, function(e) replace(e, 'up{job=~"llmprobe"}', 'up{%s}' % c.llmprobeSelector)),
    LLMProbeCanaryRegression(c, r):
      // [metric label, literal in the file, knob]
      local limits = [
        ['tpot_mean', '1.05', c.canaryTPOTMeanRatio],
        ['itl_mean', '1.05', c.canaryITLMeanRatio],
        ['ttft_mean', '1.10', c.canaryTTFTMeanRatio],
        ['ttft_p99', '2', c.canaryTTFTP99Ratio],
        ['tpot_p99', '1.25', c.canaryTPOTP99Ratio],
        ['goodput', '-0.05', c.canaryGoodputDiff],
      ];
      local expr = std.foldl(
        function(e, l) num(e, '%s, "metric", "' + l[0] + '"', l[1], l[2]), limits, r.expr
      );
      local changed = std.any([std.parseJson(l[1]) != l[2] for l in limits]);
      local desc = replace(r.annotations.description, canaryDefault, canaryDefault);
      r {
        expr: num(expr, 'min_increase10m >= %s', '200', c.canaryMinRequests),
        annotations+: {
          description: if changed then std.strReplace(desc, canaryDefault, canaryPhrase(c)) else desc,
        },
      },
    LLMProbeAnswerRegression(c, r):
      r {
        expr: num(num(r.expr, 'ratio30m < %s', '0.9', c.answerPassRatio), 'increase30m >= %s', '20', c.answerMinChecks),
        annotations+: { summary: pct(r.annotations.summary, 'less than %s %%', '90', c.answerPassRatio) },
      },
    LLMProbeClientReadLag(c, r):
      withExpr(r, function(e) num(e, 'ratio_rate10m > %s', '0.01', c.clientReadLagRatio)),
    LLMProbeCapacityRegression(c, r):
      r {
        expr: num(r.expr, '< %s', '0.8', c.capacityRegressionRatio),
        annotations+: { summary: pct(r.annotations.summary, 'below %s %%', '80', c.capacityRegressionRatio) },
      },
    LLMProbeReplicaOutlier(c, r):
      r {
        expr: num(r.expr, 'ratio_median_10m >= %s', '1.9', c.replicaOutlierRatio),
        'for': c.replicaOutlierFor,
        annotations+: {
          description: num(
            num(
              replace(r.annotations.description, 'held for 15m', 'held for %s' % c.replicaOutlierFor),
              'at least %s times', '1.9', c.replicaOutlierRatio
            ),
            'at least %s successful', '200', c.replicaMinRequests
          ),
        },
      },
    LLMProbeEnergyPerGoodTokenRegression(c, r):
      r {
        expr: num(num(r.expr, '> %s', '1.2', c.energyRegressionRatio), ') < %s', '0.25', c.energyLoadBand),
        annotations+: {
          summary: num(r.annotations.summary, 'more than %s times', '1.2', c.energyRegressionRatio),
          description: pct(r.annotations.description, 'within %s %%', '25', c.energyLoadBand),
        },
      },
    LLMProbeCapacityHeadroomLow(c, r):
      r {
        expr: num(r.expr, '< %s', '0.15', c.capacityHeadroomRatio),
        annotations+: { summary: pct(r.annotations.summary, 'within %s %%', '15', c.capacityHeadroomRatio) },
      },
  },

  local editAlert(c, r) =
    local edited = if std.objectHas(edits, r.alert) then edits[r.alert](c, r) else r;
    local kept = if std.objectHas(r, 'keep_firing_for') then edited { keep_firing_for: c.keepFiringFor } else edited;
    kept { annotations+: { runbook_url: c.runbookURLPattern % std.asciiLower(r.alert) } },

  local editDashboard(c, d) =
    d {
      tags: c.dashboardTags,
      refresh: c.dashboardRefresh,
      timezone: c.dashboardTimezone,
      links: [if std.objectHas(l, 'tags') then l { tags: c.dashboardTags } else l for l in d.links],
      templating+: {
        list: [
          if v.type == 'datasource' && c.dashboardDatasource != ''
          then v { current: { selected: true, text: c.dashboardDatasource, value: c.dashboardDatasource } }
          else v
          for v in d.templating.list
        ],
      },
    },

  local editGroup(c, g) = g { rules: [editAlert(c, r) for r in g.rules] },

  // Per-group edits of recording rules: function (config, rule) -> rule.
  local recordingEdits = {
    'llmprobe.replicas'(c, r):
      if std.strReplace(r.expr, 'increase10m >= 200', '') == r.expr then r
      else withExpr(r, function(e) num(e, 'increase10m >= %s', '200', c.replicaMinRequests)),
  },

  // (Each edited group must still hold the literal somewhere, or the edit
  // would be a silent no-op.)
  local editRecordingGroup(c, g) =
    if !std.objectHas(recordingEdits, g.name) then g
    else
      local edited = g { rules: [recordingEdits[g.name](c, r) for r in g.rules] };
      if std.length([r for r in g.rules if std.strReplace(r.expr, 'increase10m >= 200', '') != r.expr]) == 0
      then error 'mixin: increase10m >= 200 not found in group %s' % g.name
      else edited,

  prometheusRules+:: {
    groups+: [editRecordingGroup($._config, g) for g in groups if !isAlertGroup(g)],
  },

  prometheusAlerts+:: {
    groups+: [editGroup($._config, g) for g in groups if isAlertGroup(g)] +
             (if $._config.absentAlert then [editGroup($._config, g) for g in optionalGroups if g.name == 'llmprobe.absent'] else []) +
             (if $._config.energyAlert then [editGroup($._config, g) for g in optionalGroups if g.name == 'llmprobe.energy.alerts'] else []),
  },

  grafanaDashboards+:: {
    [name]: editDashboard($._config, dashboardFiles[name])
    for name in std.objectFields(dashboardFiles)
  },
}

package rules_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/rules"
)

// inhibitFile is the Alertmanager inhibition rules shipped for the alerts.
const inhibitFile = "../deploy/alertmanager/inhibit-rules.yml"

// absentCalls returns the absent() and absent_over_time() calls in expr.
func absentCalls(p parser.Parser, expr string) ([]string, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if c, ok := n.(*parser.Call); ok && strings.HasPrefix(c.Func.Name, "absent") {
			out = append(out, c.String())
		}
		return nil
	})
	return out, nil
}

// TestNoAbsentInSharedRules checks that no shared rule uses absent(): it
// fires in every Prometheus that loads the rules without scraping llmprobe.
// The opt-in files may, and the check itself can fail.
func TestNoAbsentInSharedRules(t *testing.T) {
	p := rules.NewParser()
	for _, tc := range []struct {
		expr string
		want int
	}{
		{expr: `up == 0 or absent(llmprobe_build_info)`, want: 1},
		{expr: `absent_over_time(up{job="llmprobe"}[5m])`, want: 1},
		{expr: `up{job=~"llmprobe"} == 0`},
	} {
		got, err := absentCalls(p, tc.expr)
		if err != nil || len(got) != tc.want {
			t.Errorf("absentCalls(%q) = %v, %v; want %d calls", tc.expr, got, err, tc.want)
		}
	}
	for _, r := range allRules(load(t)) {
		got, err := absentCalls(p, r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			t.Errorf("%s%s uses %v in a shared rule file; put it in optional/", r.Record, r.Alert, got)
		}
	}
	opt, err := rules.LoadOptional()
	if err != nil {
		t.Fatal(err)
	}
	var absentAlerts []string
	for _, r := range allRules(opt) {
		if got, _ := absentCalls(p, r.Expr); len(got) > 0 {
			absentAlerts = append(absentAlerts, r.Alert)
		}
	}
	if !slices.Contains(absentAlerts, "LLMProbeAbsent") {
		t.Errorf("optional/ has no LLMProbeAbsent on absent() (absent alerts: %v)", absentAlerts)
	}
}

// TestDownUsesJobSelector pins LLMProbeDown to up of the configured job,
// the selector the docs tell users to edit.
func TestDownUsesJobSelector(t *testing.T) {
	for _, r := range allRules(load(t)) {
		if r.Alert != "LLMProbeDown" {
			continue
		}
		if !strings.Contains(r.Expr, `up{job=~"llmprobe"} == 0`) {
			t.Fatalf("LLMProbeDown does not read up{job=~\"llmprobe\"}: %s", r.Expr)
		}
		return
	}
	t.Fatal("no LLMProbeDown")
}

var burnWindow = regexp.MustCompile(`^target_probe:llmprobe_goodput_budget_burn:ratio_rate(\w+)$`)

// historyGuard returns the longest burn-rate window expr reads and the
// windows its history guards cover: present_over_time(llmprobe_requests_total
// [R] offset O) covers O+R when O is at least 3/4 of O+R (the series has been
// there for most of that window); any other use covers nothing.
func historyGuard(p parser.Parser, expr string) (longest time.Duration, covered []time.Duration, err error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return 0, nil, err
	}
	var errs []error
	parser.Inspect(e, func(n parser.Node, path []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			if m := burnWindow.FindStringSubmatch(n.Name); m != nil && !unlessed(n, path) {
				d, err := time.ParseDuration(m[1])
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
					return nil
				}
				longest = max(longest, d)
			}
		case *parser.Call:
			if n.Func.Name != "present_over_time" || len(n.Args) != 1 {
				return nil
			}
			ms, ok := n.Args[0].(*parser.MatrixSelector)
			if !ok {
				return nil
			}
			vs, ok := ms.VectorSelector.(*parser.VectorSelector)
			if !ok || vs.Name != probemetrics.NameRequests {
				return nil
			}
			if w := vs.OriginalOffset + ms.Range; vs.OriginalOffset*4 >= w*3 {
				covered = append(covered, w)
			}
		}
		return nil
	})
	return longest, covered, errors.Join(errs...)
}

// unlessed reports whether n lies on the right of an `unless` in path (its
// ancestors, outermost first): a burn rate read there only silences the
// alert, it never makes it fire.
func unlessed(n parser.Node, path []parser.Node) bool {
	for i, a := range path {
		b, ok := a.(*parser.BinaryExpr)
		if !ok || b.Op != parser.LUNLESS {
			continue
		}
		child := n
		if i+1 < len(path) {
			child = path[i+1]
		}
		if child == b.RHS {
			return true
		}
	}
	return false
}

// TestBurnAlertsNeedHistory checks that every alert on a burn rate requires
// its probe's series to be at least 3/4 of its longest window old, so that
// right after a start a 1h or 6h window (which then holds minutes) does not
// act like a 5-minute one. The check itself can fail.
func TestBurnAlertsNeedHistory(t *testing.T) {
	p := rules.NewParser()
	for _, tc := range []struct {
		name, expr string
		ok         bool
	}{
		{name: "no guard", expr: `target_probe:llmprobe_goodput_budget_burn:ratio_rate1h > 14.4`},
		{name: "guard too short", expr: `target_probe:llmprobe_goodput_budget_burn:ratio_rate6h > 6 and on (target, probe) present_over_time(llmprobe_requests_total[15m] offset 45m)`},
		{name: "guard too recent", expr: `target_probe:llmprobe_goodput_budget_burn:ratio_rate1h > 14.4 and on (target, probe) present_over_time(llmprobe_requests_total[1h])`},
		{name: "guarded", ok: true, expr: `target_probe:llmprobe_goodput_budget_burn:ratio_rate1h > 14.4 and on (target, probe) present_over_time(llmprobe_requests_total[15m] offset 45m)`},
		{name: "silenced by a burn rate only", ok: true, expr: `x < 0.99 unless on (target, probe) target_probe:llmprobe_goodput_budget_burn:ratio_rate5m > 14.4`},
		{name: "unless on the left", expr: `target_probe:llmprobe_goodput_budget_burn:ratio_rate1h > 14.4 unless on (target) y`},
	} {
		longest, covered, err := historyGuard(p, tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := longest == 0 || slices.Contains(covered, longest); got != tc.ok {
			t.Errorf("%s: guarded = %v, want %v (longest %s, covered %v)", tc.name, got, tc.ok, longest, covered)
		}
	}
	n := 0
	for _, r := range allRules(loadAll(t)) {
		if r.Alert == "" {
			continue
		}
		longest, covered, err := historyGuard(p, r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		if longest == 0 {
			continue
		}
		n++
		if !slices.Contains(covered, longest) {
			t.Errorf("%s reads a %s burn rate without a history guard over it (guards cover %v)", r.Alert, longest, covered)
		}
	}
	if n != 2 {
		t.Errorf("%d burn-rate alerts, want 2", n)
	}
}

// promtoolTests is the part of a promtool test file these tests read.
type promtoolTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			AlertName string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// alertLabels returns, for each alert that some promtool test in tests/
// expects to fire, the labels it fires with (alertname included).
func alertLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	paths, err := filepath.Glob("tests/*.yml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no promtool tests: %v", err)
	}
	out := map[string]map[string]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var pt promtoolTests
		if err := yaml.Unmarshal(data, &pt); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tc := range pt.Tests {
			for _, at := range tc.AlertRuleTest {
				for _, a := range at.ExpAlerts {
					if out[at.AlertName] == nil {
						out[at.AlertName] = map[string]bool{labels.AlertName: true}
					}
					for l := range a.ExpLabels {
						out[at.AlertName][l] = true
					}
				}
			}
		}
	}
	return out
}

// inhibitRules is the shape of Alertmanager's inhibit_rules (0.22+).
type inhibitRules struct {
	InhibitRules []struct {
		SourceMatchers []string `yaml:"source_matchers"`
		TargetMatchers []string `yaml:"target_matchers"`
		Equal          []string `yaml:"equal"`
	} `yaml:"inhibit_rules"`
}

// matcherRE parses one Alertmanager matcher: name, operator, value
// (optionally double-quoted).
var matcherRE = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(?:"([^"]*)"|(\S+))$`)

// matchedAlerts returns the alerts of known that a list of matchers selects,
// and an error for a matcher that does not parse, names an alert that does
// not exist, or reads a label the selected alerts do not carry.
func matchedAlerts(matchers []string, known map[string]map[string]bool) ([]string, error) {
	if len(matchers) == 0 {
		return nil, errors.New("no matchers")
	}
	var out []string
	var nameSet bool
	var labelMatchers [][]string
	for _, m := range matchers {
		sm := matcherRE.FindStringSubmatch(strings.TrimSpace(m))
		if sm == nil {
			return nil, fmt.Errorf("matcher %q does not parse", m)
		}
		name, op, val := sm[1], sm[2], sm[3]+sm[4]
		if name != labels.AlertName {
			labelMatchers = append(labelMatchers, []string{name, m})
			continue
		}
		if nameSet {
			return nil, fmt.Errorf("matcher %q: alertname matched twice", m)
		}
		nameSet = true
		var names []string
		switch op {
		case "=":
			names = []string{val}
		case "=~":
			names = strings.Split(val, "|")
		default:
			return nil, fmt.Errorf("matcher %q: use = or =~ with a list of alert names", m)
		}
		for _, n := range names {
			if _, ok := known[n]; !ok {
				return nil, fmt.Errorf("matcher %q: no alert %q fires in the promtool tests", m, n)
			}
		}
		out = names
	}
	if !nameSet {
		return nil, errors.New("no alertname matcher: the rule could match any alert")
	}
	for _, lm := range labelMatchers {
		for _, a := range out {
			if !known[a][lm[0]] {
				return nil, fmt.Errorf("matcher %q: alert %s has no label %s", lm[1], a, lm[0])
			}
		}
	}
	return out, nil
}

// externalLabels are the labels Prometheus adds to every alert it sends
// (external_labels), which promtool tests do not show: an inhibition may
// compare them (a label missing on both sides is equal in Alertmanager).
var externalLabels = []string{"cluster"}

// inhibitSources returns the alerts that are the source of some rule of
// inhibitFile.
func inhibitSources(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(inhibitFile)
	if err != nil {
		t.Fatal(err)
	}
	inhibits, err := checkInhibitRules(data, alertLabels(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for a := range inhibits {
		out[a] = true
	}
	return out
}

// checkInhibitRules parses inhibition rules and checks them against the
// alerts and their labels; it returns each rule's source and target alerts.
func checkInhibitRules(data []byte, known map[string]map[string]bool) (map[string][]string, error) {
	var ir inhibitRules
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&ir); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if len(ir.InhibitRules) == 0 {
		return nil, errors.New("no inhibit_rules")
	}
	inhibits := map[string][]string{}
	var errs []error
	for i, r := range ir.InhibitRules {
		src, err := matchedAlerts(r.SourceMatchers, known)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %d source: %w", i, err))
			continue
		}
		dst, err := matchedAlerts(r.TargetMatchers, known)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %d target: %w", i, err))
			continue
		}
		if len(r.Equal) == 0 {
			errs = append(errs, fmt.Errorf("rule %d: no equal labels: a source would mute every target alert of every target", i))
		}
		for _, l := range r.Equal {
			if slices.Contains(externalLabels, l) {
				continue
			}
			for _, a := range slices.Concat(src, dst) {
				if !known[a][l] {
					errs = append(errs, fmt.Errorf("rule %d: equal label %s is not a label of %s", i, l, a))
				}
			}
		}
		for _, s := range src {
			if slices.Contains(dst, s) {
				errs = append(errs, fmt.Errorf("rule %d: %s inhibits itself", i, s))
			}
			inhibits[s] = append(inhibits[s], dst...)
		}
	}
	return inhibits, errors.Join(errs...)
}

// TestInhibitRules checks deploy/alertmanager/inhibit-rules.yml: it parses
// as Alertmanager's inhibit_rules, every alert it names exists (and fires in
// a promtool test), every label it matches or compares is one those alerts
// carry, and LLMProbeTargetFailing inhibits both burn-rate alerts. Broken
// variants fail.
func TestInhibitRules(t *testing.T) {
	known := alertLabels(t)
	for _, r := range allRules(loadAll(t)) {
		if r.Alert != "" && known[r.Alert] == nil {
			t.Errorf("alert %s fires in no promtool test: its labels are unknown", r.Alert)
		}
	}
	for a := range known {
		found := false
		for _, r := range allRules(loadAll(t)) {
			found = found || r.Alert == a
		}
		if !found {
			t.Errorf("promtool tests expect alert %s, which no rule file defines", a)
		}
	}

	data, err := os.ReadFile(inhibitFile)
	if err != nil {
		t.Fatal(err)
	}
	inhibits, err := checkInhibitRules(data, known)
	if err != nil {
		t.Fatal(err)
	}
	// The chain of issue 21 D4: one page per incident.
	consequences := []string{"LLMProbeGoodputBudgetBurnFast", "LLMProbeGoodputBudgetBurnSlow", "LLMProbeTTFTAboveSLO",
		"LLMProbeTPOTAboveSLO", "LLMProbeCanaryRegression"}
	for src, wants := range map[string][]string{
		"LLMProbeTargetFailing":         consequences,
		"LLMProbeTargetRecentlyFailed":  consequences,
		"LLMProbeGoodputBudgetBurnFast": {"LLMProbeGoodputBudgetBurnSlow", "LLMProbeTTFTAboveSLO", "LLMProbeTPOTAboveSLO", "LLMProbeCanaryRegression"},
		"LLMProbeGoodputBudgetBurnSlow": {"LLMProbeTTFTAboveSLO", "LLMProbeTPOTAboveSLO", "LLMProbeCanaryRegression"},
	} {
		for _, want := range wants {
			if !slices.Contains(inhibits[src], want) {
				t.Errorf("%s does not inhibit %s (inhibits %v)", src, want, inhibits[src])
			}
		}
	}
	// LLMProbeDown mutes every other alert, LLMProbeAbsent included: a new
	// alert without it would page when llmprobe is down.
	for _, r := range allRules(loadAll(t)) {
		if r.Alert != "" && r.Alert != "LLMProbeDown" && !slices.Contains(inhibits["LLMProbeDown"], r.Alert) {
			t.Errorf("LLMProbeDown does not inhibit %s", r.Alert)
		}
	}

	for _, tc := range []struct{ name, data, want string }{
		{name: "unknown alert", want: `no alert "LLMProbeNope"`, data: `
inhibit_rules:
  - source_matchers: [alertname = LLMProbeNope]
    target_matchers: [alertname = LLMProbeGoodputBudgetBurnFast]
    equal: [target]
`},
		{name: "unknown alert in alternation", want: `no alert "LLMProbeBurn"`, data: `
inhibit_rules:
  - source_matchers: [alertname = LLMProbeTargetFailing]
    target_matchers: ['alertname =~ "LLMProbeGoodputBudgetBurnFast|LLMProbeBurn"']
    equal: [target]
`},
		{name: "equal label missing on the source", want: "equal label probe is not a label of LLMProbeTargetFailing", data: `
inhibit_rules:
  - source_matchers: [alertname = LLMProbeTargetFailing]
    target_matchers: [alertname = LLMProbeGoodputBudgetBurnFast]
    equal: [target, probe]
`},
		{name: "no equal", want: "no equal labels", data: `
inhibit_rules:
  - source_matchers: [alertname = LLMProbeTargetFailing]
    target_matchers: [alertname = LLMProbeGoodputBudgetBurnFast]
`},
		{name: "label the alert lacks", want: "has no label model", data: `
inhibit_rules:
  - source_matchers: [alertname = LLMProbeTargetFailing, model = x]
    target_matchers: [alertname = LLMProbeGoodputBudgetBurnFast]
    equal: [target]
`},
		{name: "no alertname", want: "no alertname matcher", data: `
inhibit_rules:
  - source_matchers: [severity = critical]
    target_matchers: [alertname = LLMProbeGoodputBudgetBurnFast]
    equal: [target]
`},
		{name: "old syntax", want: "field source_match not found", data: `
inhibit_rules:
  - source_match: {alertname: LLMProbeTargetFailing}
    target_match: {alertname: LLMProbeGoodputBudgetBurnFast}
    equal: [target]
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkInhibitRules([]byte(tc.data), known)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// TestRunbookChecksTargetFirst pins the order of the runbook: a late prober
// is often a symptom of its target (a hung target delays sends), so the
// first check of LLMProbeProberSaturated is the target, and the runbook's
// general advice starts with LLMProbeTargetFailing, not with the prober.
func TestRunbookChecksTargetFirst(t *testing.T) {
	data, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	_, sec, ok := strings.Cut(doc, "\n## LLMProbeProberSaturated\n")
	if !ok {
		t.Fatal("no LLMProbeProberSaturated section")
	}
	_, checks, ok := strings.Cut(sec, "**First checks.**\n")
	if !ok {
		t.Fatal("no first checks")
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(checks, "1. "), "\n2. ")
	if !strings.Contains(strings.ToLower(first), "the target first") {
		t.Errorf("the first check of LLMProbeProberSaturated is not the target: %q", first)
	}
	_, general, ok := strings.Cut(doc, "\n## What to check first\n")
	if !ok {
		t.Fatal("no \"What to check first\" section")
	}
	general, _, _ = strings.Cut(general, "\n## ")
	tf, ps := strings.Index(general, "LLMProbeTargetFailing"), strings.Index(general, "LLMProbeProberSaturated")
	if tf < 0 || ps < 0 || tf > ps {
		t.Errorf("\"What to check first\" must name LLMProbeTargetFailing before LLMProbeProberSaturated (at %d and %d)", tf, ps)
	}
}

// amExample is the part of deploy/alertmanager/alertmanager.yml this test
// reads.
type amExample struct {
	Route struct {
		Receiver string `yaml:"receiver"`
		Routes   []struct {
			Matchers []string `yaml:"matchers"`
			Receiver string   `yaml:"receiver"`
		} `yaml:"routes"`
	} `yaml:"route"`
	Receivers []map[string]any `yaml:"receivers"`
	Inhibit   yaml.Node        `yaml:"inhibit_rules"`
}

// TestAlertmanagerExample checks deploy/alertmanager/alertmanager.yml: its
// inhibit_rules are the list of inhibit-rules.yml, and the inhibitors
// (severity none) go to a receiver without integrations.
func TestAlertmanagerExample(t *testing.T) {
	data, err := os.ReadFile("../deploy/alertmanager/alertmanager.yml")
	if err != nil {
		t.Fatal(err)
	}
	var ex amExample
	if err := yaml.Unmarshal(data, &ex); err != nil {
		t.Fatal(err)
	}
	var want struct {
		Inhibit yaml.Node `yaml:"inhibit_rules"`
	}
	wantData, err := os.ReadFile(inhibitFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(wantData, &want); err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := ex.Inhibit.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if err := want.Inhibit.Decode(&exp); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(exp) || got == nil {
		t.Errorf("inhibit_rules of alertmanager.yml differ from %s:\n%v\nwant\n%v", inhibitFile, got, exp)
	}
	null := ""
	for _, r := range ex.Route.Routes {
		if slices.Contains(r.Matchers, "severity = none") {
			null = r.Receiver
		}
	}
	if null == "" || null == ex.Route.Receiver {
		t.Fatalf("no route sends severity none to a receiver of its own (routes %v)", ex.Route.Routes)
	}
	for _, r := range ex.Receivers {
		if r["name"] == null && len(r) != 1 {
			t.Errorf("receiver %q of severity none has integrations: %v", null, r)
		}
	}
	for a := range inhibitSources(t) {
		for _, r := range allRules(loadAll(t)) {
			if r.Alert == a && r.Labels["severity"] == "none" {
				return
			}
		}
	}
	t.Error("no inhibitor of severity none")
}

// orBranches splits an alert expression into the branches that can make it
// fire: through parentheses, both sides of `or`, and the left of an
// `unless` that does not read the history guard (a sweep exclusion).
func orBranches(e parser.Expr) []parser.Expr {
	switch n := e.(type) {
	case *parser.ParenExpr:
		return orBranches(n.Expr)
	case *parser.BinaryExpr:
		switch {
		case n.Op == parser.LOR:
			return append(orBranches(n.LHS), orBranches(n.RHS)...)
		case n.Op == parser.LUNLESS && !strings.Contains(n.RHS.String(), "present_over_time"):
			return orBranches(n.LHS)
		}
	}
	return []parser.Expr{e}
}

// countGuard returns the smallest N of `target_probe:llmprobe_arrivals:increase15m >= N`
// in e, and whether e has one.
func countGuard(e parser.Expr) (float64, bool) {
	n, ok := 0.0, false
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		b, isBin := node.(*parser.BinaryExpr)
		if !isBin || b.Op != parser.GTE {
			return nil
		}
		vs, isVS := b.LHS.(*parser.VectorSelector)
		num, isNum := b.RHS.(*parser.NumberLiteral)
		if isVS && isNum && vs.Name == "target_probe:llmprobe_arrivals:increase15m" && (!ok || num.Val < n) {
			n, ok = num.Val, true
		}
		return nil
	})
	return n, ok
}

// TestBurnBranchesAreGuarded checks every branch of each burn-rate alert:
// one with a window of an hour or more has a history guard over it (as
// TestBurnAlertsNeedHistory); one without (the fast burn's branch for new
// probes) reads windows of 15 minutes at most, needs at least 100 arrivals
// in 15 minutes, and is off once the probe has its 45 minutes of history,
// so the two branches do not page for the same burn. Broken variants fail.
func TestBurnBranchesAreGuarded(t *testing.T) {
	p := rules.NewParser()
	check := func(expr string) error {
		e, err := p.ParseExpr(expr)
		if err != nil {
			return err
		}
		var errs []error
		for _, b := range orBranches(e) {
			longest, covered, err := historyGuard(p, b.String())
			if err != nil {
				return err
			}
			if longest == 0 || slices.Contains(covered, longest) {
				continue
			}
			n, ok := countGuard(b)
			switch {
			case longest > 15*time.Minute:
				errs = append(errs, fmt.Errorf("branch %s reads a %s burn rate without a history guard", b, longest))
			case !ok || n < 100:
				errs = append(errs, fmt.Errorf("branch %s has no guard of at least 100 arrivals in 15m", b))
			case !strings.Contains(b.String(), "unless on (cluster, target, probe) group by (cluster, target, probe) (present_over_time(llmprobe_requests_total[15m] offset 45m))"):
				errs = append(errs, fmt.Errorf("branch %s is not off once the probe has 45 minutes of history", b))
			}
		}
		return errors.Join(errs...)
	}
	const burn15 = `target_probe:llmprobe_goodput_budget_burn:ratio_rate15m > 14.4`
	const hist = `unless on (cluster, target, probe) group by (cluster, target, probe) (present_over_time(llmprobe_requests_total[15m] offset 45m))`
	for _, tc := range []struct{ name, expr, want string }{
		{name: "no count", want: "no guard", expr: burn15 + ` ` + hist},
		{name: "too few", want: "no guard", expr: burn15 + ` and on (cluster, target, probe) target_probe:llmprobe_arrivals:increase15m >= 10 ` + hist},
		{name: "with history too", want: "not off", expr: burn15 + ` and on (cluster, target, probe) target_probe:llmprobe_arrivals:increase15m >= 100`},
		{name: "long window", want: "without a history guard", expr: `target_probe:llmprobe_goodput_budget_burn:ratio_rate1h > 14.4 or on (target) (` + burn15 + `)`},
		{name: "guarded", expr: `(target_probe:llmprobe_goodput_budget_burn:ratio_rate1h > 14.4 and on (target, probe) present_over_time(llmprobe_requests_total[15m] offset 45m) or on (cluster, target, probe) ` +
			burn15 + ` and on (cluster, target, probe) target_probe:llmprobe_arrivals:increase15m >= 100 ` + hist + `) unless on (cluster, target) max_over_time(llmprobe_sweep_running[15m]) == 1`},
	} {
		err := check(tc.expr)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	for _, r := range allRules(loadAll(t)) {
		if r.Alert == "" {
			continue
		}
		if err := check(r.Expr); err != nil {
			t.Errorf("%s: %v", r.Alert, err)
		}
	}
}

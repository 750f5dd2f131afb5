// Package rules owns llmprobe's Prometheus recording and alerting rules: the
// YAML files in this directory (llmprobe.rules.yml, llmprobe.alerts.yml),
// organised like a monitoring mixin, the opt-in rule files in optional/
// (llmprobe.absent.yml: alerts that are only right in some Prometheus
// servers, never part of the shared files or the generated PrometheusRule),
// and their promtool unit tests in tests/. The YAML files are the product: load them into Prometheus as they
// are. This package embeds the very same bytes for Go code that builds on
// them (the Kubernetes PrometheusRule generator, the dashboard tests) and
// offers the helpers those tests share: parsing with Prometheus' own rulefmt
// and PromQL parser, and a Catalog of the metric names rules and dashboards
// may read.
package rules

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

//go:embed *.yml
var files embed.FS

//go:embed optional/*.yml
var optionalFiles embed.FS

// FS holds the shared rule files (*.yml of this directory, not the tests nor
// optional/), read-only.
var FS fs.FS = files

// OptionalFS holds the opt-in rule files (optional/*.yml) under the directory
// "optional", read-only.
var OptionalFS fs.FS = optionalFiles

// RunbookBase is the URL every alert's runbook_url starts with; the anchor
// after it is the alert name in lower case (GitHub's heading anchor of the
// alert's section in docs/runbook.md).
const RunbookBase = "https://github.com/llmprobe/llmprobe/blob/main/docs/runbook.md"

// File is one parsed rule file.
type File struct {
	// Name is the file name, e.g. "llmprobe.rules.yml".
	Name string
	// Data is the file's content as committed.
	Data []byte
	// Groups are the rule groups, parsed and validated by rulefmt.
	Groups []rulefmt.RuleGroup
}

// Load parses every shared rule file (FS) with Prometheus' rulefmt (the
// loader Prometheus itself uses: unknown fields, invalid names, expressions
// and templates are errors) and returns the files sorted by name.
func Load() ([]File, error) { return load(FS, "*.yml") }

// LoadOptional parses the opt-in rule files (OptionalFS) like Load; their
// names keep the directory, e.g. "optional/llmprobe.absent.yml".
func LoadOptional() ([]File, error) { return load(OptionalFS, "optional/*.yml") }

func load(fsys fs.FS, pattern string) ([]File, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("list rule files: %w", err)
	}
	sort.Strings(names)
	out := make([]File, 0, len(names))
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
		groups, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, File{Name: n, Data: data, Groups: groups})
	}
	return out, nil
}

// Parse parses and validates the content of one rule file with rulefmt and
// the default PromQL parser (no experimental functions).
func Parse(data []byte) ([]rulefmt.RuleGroup, error) {
	rgs, errs := rulefmt.Parse(data, false, model.LegacyValidation, NewParser(), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rgs.Groups, nil
}

// NewParser returns the PromQL parser the checks use: Prometheus' defaults,
// so an expression that needs an experimental feature flag fails.
func NewParser() parser.Parser { return parser.NewParser(parser.Options{}) }

// RecordedNames returns the names of the series the recording rules of files
// produce, sorted and without duplicates.
func RecordedNames(files []File) []string {
	var out []string
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					out = append(out, r.Record)
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// literalName matches a metric name written literally (no regular expression
// syntax), so "a|b" alternations in __name__ matchers can be resolved.
var literalName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// MetricNames parses a PromQL expression and returns the metric names its
// selectors read, sorted and without duplicates. A selector naming its metric
// through a __name__ matcher is resolved when the matcher is an equality or a
// regular expression that is an alternation of literal names
// ("a_total|b_total"); any other selector without a resolvable name is an
// error, since it could read anything.
func MetricNames(p parser.Parser, expr string) ([]string, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var (
		names []string
		errs  []error
	)
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names = append(names, vs.Name)
			return nil
		}
		var found bool
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName {
				continue
			}
			switch m.Type {
			case labels.MatchEqual:
				names = append(names, m.Value)
				found = true
			case labels.MatchRegexp:
				alts := strings.Split(m.Value, "|")
				for _, a := range alts {
					if !literalName.MatchString(a) {
						errs = append(errs, fmt.Errorf("selector %s: __name__ regexp %q is not a list of literal names", vs, m.Value))
						return nil
					}
				}
				names = append(names, alts...)
				found = true
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("selector %s names no metric", vs))
		}
		return nil
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Strings(names)
	return slices.Compact(names), nil
}

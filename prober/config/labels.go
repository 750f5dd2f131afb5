package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/prober/knob"
)

// MaxTargetLabels is the most static labels one target may carry.
const MaxTargetLabels = 16

// MaxTargetLabelValueLen is the longest value, in bytes, of a target's
// static label.
const MaxTargetLabelValueLen = 128

// ReservedTargetLabels are the label names a target's static labels may not
// use: the labels llmprobe's own series carry (target, probe, outcome, ...),
// the ones Prometheus sets on scrape (job, instance) and the histogram and
// summary labels. Names starting with "__" are reserved too.
var ReservedTargetLabels = []string{
	"target", "probe", "job", "instance", "le", "quantile",
	"outcome", "reason", "slo", "sweep", "run", "step",
	"model", "engine", "server_version", "server_instance", "max_model_len",
}

// labelNamePattern is a legacy Prometheus label name (letters, digits and
// _, not starting with a digit).
const labelNamePattern = `[a-zA-Z_][a-zA-Z0-9_]*`

var labelNameRE = regexp.MustCompile(`^` + labelNamePattern + `$`)

// validateLabels checks a target's static labels: at most MaxTargetLabels,
// names valid Prometheus label names and not reserved, values non-empty,
// valid UTF-8 and at most MaxTargetLabelValueLen bytes. Problems are added
// under labels.<name>, in name order.
func validateLabels(l *problems, labels map[string]string) {
	if len(labels) > MaxTargetLabels {
		l.add("labels", fmt.Errorf("at most %d labels, got %d", MaxTargetLabels, len(labels)))
		return
	}
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, path := labels[k], "labels."+k
		switch {
		case !labelNameRE.MatchString(k):
			l.add(path, fmt.Errorf("label name must match %s, got %q", labelNamePattern, k))
		case strings.HasPrefix(k, "__"):
			l.add(path, fmt.Errorf("label name %q is reserved (names starting with __)", k))
		case slices.Contains(ReservedTargetLabels, k):
			l.add(path, fmt.Errorf("label name %q is reserved (one of %s)", k, strings.Join(ReservedTargetLabels, ", ")))
		case v == "":
			l.add(path, errors.New("must not be empty"))
		case !utf8.ValidString(v):
			l.add(path, errors.New("must be valid UTF-8"))
		case len(v) > MaxTargetLabelValueLen:
			l.add(path, fmt.Errorf("at most %d bytes, got %d", MaxTargetLabelValueLen, len(v)))
		}
	}
}

// validateCostPerHour checks cost_per_hour: knob.CostPerHour, the rule of
// a sweep's --cost-per-hour (the sweeps it prices take the same).
func validateCostPerHour(v float64) error {
	if p := knob.CostPerHour("CostPerHour", v); p != nil {
		return errors.New(p.Reason)
	}
	return nil
}

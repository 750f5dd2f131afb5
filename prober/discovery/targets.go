package discovery

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-kit/log/level"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/llmprobe/llmprobe/prober/config"
)

// The labels that make a discovered target's base URL, as a Prometheus
// scrape target's __scheme__ and __address__; __path_prefix__ is
// llmprobe's (a server root below a path, e.g. a gateway's /llama).
const (
	AddressLabel    = model.AddressLabel // __address__
	SchemeLabel     = model.SchemeLabel  // __scheme__, default http
	PathPrefixLabel = "__path_prefix__"
)

// The labels that, when relabelling sets them, give a discovered target its
// GPU energy source (issue 38): the DCGM exporter's /metrics URL
// (gpu_metrics_url, e.g. from the pod's host IP: the exporter is a
// DaemonSet) and the selector choosing its GPUs there (gpu_selector, e.g.
// pod="<the pod's name>": dcgm-exporter labels a GPU with the pod using
// it). They override the entry's target template.
const (
	GPUMetricsURLLabel = "__gpu_metrics_url__"
	GPUSelectorLabel   = "__gpu_selector__"
)

// The kubernetes_sd labels of a pod target that give its default GPU
// selector.
const (
	metaPodName      = model.MetaLabelPrefix + "kubernetes_pod_name"
	metaPodNamespace = model.MetaLabelPrefix + "kubernetes_namespace"
)

// The reasons a discovered target is dropped (the reason label of
// llmprobe_discovery_dropped_targets).
const (
	// DropRelabel: relabel_configs dropped it (drop, keep, ...).
	DropRelabel = "relabel"
	// DropInvalid: no __address__, a scheme other than http or https, a
	// name or labels that break the rules of a static target.
	DropInvalid = "invalid"
	// DropCollision: its name is a static target's, an earlier entry's, or
	// another target's of the same entry.
	DropCollision = "collision"
	// DropMaxTargets: over the entry's max_targets or, all entries
	// together, config.MaxDiscoveredTargets.
	DropMaxTargets = "max_targets"
)

// DropReasons lists the drop reasons in a stable order.
var DropReasons = []string{DropRelabel, DropInvalid, DropCollision, DropMaxTargets}

// Target is one discovered target.
type Target struct {
	// Entry is the name of the discovery entry that found it.
	Entry string
	// Config is the entry's template with the target's name and base URL:
	// resolved and valid.
	Config config.TargetConfig
	// Labels are the labels that survived relabelling (none starting with
	// __): the daemon adds them to every series of the target.
	Labels map[string]string
}

// Targets derives the current targets of every entry, in config order and,
// within an entry, by name: relabelled, named, checked, deduplicated
// against taken (the static targets' names) and the earlier ones, bounded
// by each entry's max_targets and config.MaxDiscoveredTargets all entries
// together. It sets llmprobe_discovery_targets and
// llmprobe_discovery_dropped_targets, and logs the drops of an entry when
// they differ from the last call's.
func (r *Runner) Targets(taken map[string]bool) []Target {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	names := maps.Clone(taken)
	if names == nil {
		names = map[string]bool{}
	}
	var out []Target
	for _, e := range r.entries {
		e.mu.Lock()
		cfg := e.cfg
		groups := make([]groupKey, 0, len(e.groups))
		for k := range e.groups {
			groups = append(groups, k)
		}
		slices.SortFunc(groups, func(a, b groupKey) int {
			return cmp.Or(cmp.Compare(a.provider, b.provider), cmp.Compare(a.source, b.source))
		})
		var found []Target
		dropped := map[string]int{}
		var why []string
		for _, k := range groups {
			tg := e.groups[k]
			for _, tl := range tg.Targets {
				t, reason, err := derive(cfg, tg.Labels, tl)
				if reason != "" {
					dropped[reason]++
					if err != nil {
						why = append(why, err.Error())
					}
					continue
				}
				found = append(found, t)
			}
		}
		e.mu.Unlock()
		slices.SortStableFunc(found, func(a, b Target) int { return strings.Compare(a.Config.Name, b.Config.Name) })
		kept := 0
		for _, t := range found {
			switch {
			case names[t.Config.Name]:
				dropped[DropCollision]++
				why = append(why, fmt.Sprintf("target %q: name already taken", t.Config.Name))
			case kept >= cfg.MaxTargets || len(out) >= config.MaxDiscoveredTargets:
				dropped[DropMaxTargets]++
			default:
				names[t.Config.Name] = true
				out = append(out, t)
				kept++
			}
		}
		r.metrics.targets.WithLabelValues(cfg.Name).Set(float64(kept))
		for _, reason := range DropReasons {
			r.metrics.dropped.WithLabelValues(cfg.Name, reason).Set(float64(dropped[reason]))
		}
		r.logDrops(cfg.Name, dropped, why)
	}
	return out
}

// logDrops logs an entry's drops (other than relabelling's, which are
// intended) when they changed since the last call.
func (r *Runner) logDrops(entry string, dropped map[string]int, why []string) {
	summary := fmt.Sprintf("%d %d %d %s", dropped[DropInvalid], dropped[DropCollision], dropped[DropMaxTargets], strings.Join(why, "; "))
	if r.last[entry] == summary {
		return
	}
	r.last[entry] = summary
	if dropped[DropInvalid]+dropped[DropCollision]+dropped[DropMaxTargets] == 0 {
		return
	}
	const maxShown = 5
	if len(why) > maxShown {
		why = append(why[:maxShown], fmt.Sprintf("and %d more", len(why)-maxShown))
	}
	level.Warn(r.logger).Log("msg", "discovered targets dropped", "discovery", entry,
		DropInvalid, dropped[DropInvalid], DropCollision, dropped[DropCollision], DropMaxTargets, dropped[DropMaxTargets],
		"why", strings.Join(why, "; "))
}

// derive makes the target of one discovered label set (the group's labels
// overridden by the target's own): the defaults Prometheus sets before
// relabelling (__scheme__ http), the relabelling, then the base URL, name
// and labels. A dropped target returns its reason (and, when invalid, why).
// The label set is never encoded whole (labels.Builder.Labels panics on a
// value over 16 MiB): the labels are bounded (checkLabels) and read one by
// one.
func derive(cfg config.DiscoveryConfig, group, target model.LabelSet) (Target, string, error) {
	lb := labels.NewBuilder(labels.EmptyLabels())
	for k, v := range group {
		lb.Set(string(k), string(v))
	}
	for k, v := range target {
		lb.Set(string(k), string(v))
	}
	if lb.Get(SchemeLabel) == "" {
		lb.Set(SchemeLabel, "http")
	}
	if !relabel.ProcessBuilder(lb, cfg.RelabelConfigs...) {
		return Target{}, DropRelabel, nil
	}
	if err := checkLabels(lb); err != nil {
		return Target{}, DropInvalid, fmt.Errorf("a target of %s: %w", cfg.Name, err)
	}
	addr, scheme, prefix := lb.Get(AddressLabel), strings.ToLower(lb.Get(SchemeLabel)), lb.Get(PathPrefixLabel)
	switch {
	case addr == "":
		return Target{}, DropInvalid, fmt.Errorf("a target of %s has no %s after relabelling", cfg.Name, AddressLabel)
	case scheme != "http" && scheme != "https":
		return Target{}, DropInvalid, fmt.Errorf("target %s: %s must be http or https, got %q", addr, SchemeLabel, scheme)
	case prefix != "" && !strings.HasPrefix(prefix, "/"):
		return Target{}, DropInvalid, fmt.Errorf("target %s: %s must start with /, got %q", addr, PathPrefixLabel, prefix)
	}
	if err := checkAddress(addr); err != nil {
		return Target{}, DropInvalid, fmt.Errorf("target %q: %s %w", addr, AddressLabel, err)
	}
	name := lb.Get(config.DiscoveredNameLabel)
	if name == "" {
		name = config.DiscoveredName(cfg.Name, addr, prefix)
	}
	kept := map[string]string{}
	lb.Range(func(l labels.Label) {
		if !strings.HasPrefix(l.Name, "__") && l.Value != "" {
			kept[l.Name] = l.Value
		}
	})
	tc, err := cfg.NewTarget(name, scheme+"://"+addr+prefix, kept)
	if err != nil {
		return Target{}, DropInvalid, fmt.Errorf("target %q: %w", name, err)
	}
	u, sel := lb.Get(GPUMetricsURLLabel), lb.Get(GPUSelectorLabel)
	if pod := lb.Get(metaPodName); sel == "" && tc.GPUSelector == "" && pod != "" && (u != "" || tc.GPUMetricsURL != "") {
		// By default a Kubernetes pod's GPUs are the ones dcgm-exporter
		// labels with it (its --kubernetes mapping: pod, namespace).
		sel = fmt.Sprintf("pod=%q", pod)
		if ns := lb.Get(metaPodNamespace); ns != "" {
			sel += fmt.Sprintf(",namespace=%q", ns)
		}
	}
	if u != "" || sel != "" {
		if u != "" {
			tc.GPUMetricsURL = u
		}
		if sel != "" {
			tc.GPUSelector = sel
		}
		if err := config.ValidateGPUSource(tc.GPUMetricsURL, tc.GPUSelector); err != nil {
			return Target{}, DropInvalid, fmt.Errorf("target %q: %s, %s: %w", name, GPUMetricsURLLabel, GPUSelectorLabel, err)
		}
	}
	return Target{Entry: cfg.Name, Config: tc, Labels: kept}, "", nil
}

// checkLabels bounds a discovered target's labels after relabelling: each
// name at most config.MaxDiscoveredLabelNameLen bytes and each value at
// most config.MaxDiscoveredLabelValueLen, __meta_* labels excepted
// (relabelling reads them, nothing keeps them; what bounds them is the
// mechanism's own input bound). Its error quotes at most the first bytes
// of the label.
func checkLabels(lb *labels.Builder) error {
	var err error
	lb.Range(func(l labels.Label) {
		if err != nil || strings.HasPrefix(l.Name, model.MetaLabelPrefix) {
			return
		}
		switch {
		case len(l.Name) > config.MaxDiscoveredLabelNameLen:
			err = fmt.Errorf("label name %s: %d bytes, at most %d", clip(l.Name), len(l.Name), config.MaxDiscoveredLabelNameLen)
		case len(l.Value) > config.MaxDiscoveredLabelValueLen:
			err = fmt.Errorf("label %s: value of %d bytes, at most %d", clip(l.Name), len(l.Value), config.MaxDiscoveredLabelValueLen)
		}
	})
	return err
}

// checkAddress checks a discovered __address__: host or host:port, the
// host not empty (127.0.0.1: and : are refused: they would dial port 80 or
// the local host), the port a number in 1..65535; an IPv6 host in
// brackets.
func checkAddress(addr string) error {
	if strings.ContainsAny(addr, "/?#@ \\") {
		return errors.New("must be host:port")
	}
	host, port := addr, ""
	if strings.Contains(addr, ":") {
		var err error
		if host, port, err = net.SplitHostPort(addr); err != nil {
			return errors.New("must be host:port (an IPv6 address in brackets)")
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
			return fmt.Errorf("must be host:port with a port in 1..65535, got port %s", clip(port))
		}
	}
	if host == "" {
		return errors.New("must be host:port with a host, got none")
	}
	return nil
}

// clip quotes s, cut to its first 64 bytes: an error quoting a hostile
// label stays short.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q (cut, %d bytes)", s[:n], len(s))
}

package daemon

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// scrape returns the daemon's /metrics parsed, nil while it does not
// answer yet (a parse failure fails the test: the exposition must stay
// valid with discovered labels).
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	return parse(t, string(b))
}

// seriesOf returns the label sets of family name's series whose labels
// include match.
func seriesOf(mfs map[string]*dto.MetricFamily, name string, match map[string]string) []map[string]string {
	var out []map[string]string
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.Metric {
		ls := map[string]string{}
		for _, lp := range m.Label {
			ls[lp.GetName()] = lp.GetValue()
		}
		for k, v := range match {
			if ls[k] != v {
				continue next
			}
		}
		out = append(out, ls)
	}
	return out
}

// targetsWithRequests returns the targets that have llmprobe_requests_total
// series, sorted.
func targetsWithRequests(mfs map[string]*dto.MetricFamily) []string {
	var out []string
	for _, ls := range seriesOf(mfs, "llmprobe_requests_total", nil) {
		if !slices.Contains(out, ls["target"]) {
			out = append(out, ls["target"])
		}
	}
	slices.Sort(out)
	return out
}

// writeAtomic writes a file the way tools that feed file_sd do: a
// temporary file renamed over it.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// fileSDGroups is a file_sd file listing addrs, each with its replica label.
func fileSDGroups(addrs []string) string {
	var groups []string
	for i, a := range addrs {
		groups = append(groups, fmt.Sprintf(`{"targets": [%q], "labels": {"replica": "r%d"}}`, a, i+1))
	}
	return "[" + strings.Join(groups, ",") + "]"
}

// TestDiscoveryFileSD is issue 23's "Done when": a daemon with a discovery
// entry over a file_sd file listing three simulators probes all three,
// their discovered labels on every series and on llmprobe_target_info;
// rewriting the file to two removes the third's series within 30 s, with
// no reload and no error.
func TestDiscoveryFileSD(t *testing.T) {
	var addrs []string
	for range 3 {
		base, _ := simtest.Start(t, simtest.Fast())
		addrs = append(addrs, strings.TrimPrefix(base, "http://"))
	}
	dir := t.TempDir()
	sdFile := filepath.Join(dir, "sims.json")
	writeAtomic(t, sdFile, fileSDGroups(addrs))
	o, url, logs := options(t)
	cfg := `discovery:
  - name: sims
    file_sd_configs:
      - files: [sims.json]
    relabel_configs:
      - source_labels: [__meta_filepath]
        regex: .*/(.*)\.json
        target_label: sd_file
    target:
      probes:
        - {name: p, rate: 10}
        - {name: answers, answer_checks: {set: builtin, every: 10s}}
`
	setConfig(t, &o, dir, cfg)
	stop := start(t, o)
	var want []string
	for _, a := range addrs {
		want = append(want, "sims:"+a)
	}
	slices.Sort(want)
	var mfs map[string]*dto.MetricFamily
	testutil.Eventually(t, "requests to the three discovered simulators", func() bool {
		mfs = scrape(t, url)
		return slices.Equal(targetsWithRequests(mfs), want)
	})
	for i, a := range addrs {
		name := "sims:" + a
		for _, family := range []string{"llmprobe_requests_total", "llmprobe_probe_arrival_rate", "llmprobe_time_to_first_token_seconds"} {
			for _, ls := range seriesOf(mfs, family, map[string]string{"target": name}) {
				if ls["replica"] != fmt.Sprintf("r%d", i+1) || ls["sd_file"] != "sims" {
					t.Errorf("%s of %s: labels %v, want replica=r%d and sd_file=sims", family, name, ls, i+1)
				}
				for k := range ls {
					if strings.HasPrefix(k, "__") {
						t.Errorf("%s of %s has the label %s", family, name, k)
					}
				}
			}
		}
	}
	testutil.Eventually(t, "llmprobe_target_info of the discovered targets, with their labels", func() bool {
		mfs = scrape(t, url)
		for i, a := range addrs {
			if len(seriesOf(mfs, "llmprobe_target_info", map[string]string{"target": "sims:" + a, "replica": fmt.Sprintf("r%d", i+1)})) != 1 {
				return false
			}
		}
		return true
	})
	// The template's answer-check probe runs on every discovered target:
	// its set is loaded with the template (it was not, and the probe could
	// not start).
	testutil.Eventually(t, "answer checks on the three discovered simulators", func() bool {
		mfs = scrape(t, url)
		for _, a := range addrs {
			if len(seriesOf(mfs, "llmprobe_answer_checks_total", map[string]string{"target": "sims:" + a, "probe": "answers"})) == 0 {
				return false
			}
		}
		return true
	})
	if g := seriesOf(mfs, "llmprobe_discovery_targets", map[string]string{"discovery": "sims"}); len(g) != 1 {
		t.Errorf("llmprobe_discovery_targets: %v", g)
	} else if v := mfs["llmprobe_discovery_targets"].Metric[0].GetGauge().GetValue(); v != 3 {
		t.Errorf("llmprobe_discovery_targets = %v, want 3", v)
	}

	start := time.Now()
	writeAtomic(t, sdFile, fileSDGroups(addrs[:2]))
	gone := "sims:" + addrs[2]
	testutil.EventuallyWithin(t, 30*time.Second, "the third simulator's series deleted", func() bool {
		mfs = scrape(t, url)
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				for _, lp := range m.Label {
					if lp.GetName() == "target" && lp.GetValue() == gone {
						return false
					}
				}
			}
		}
		return true
	})
	t.Logf("the removed target's series were gone %v after the rewrite", time.Since(start).Round(time.Millisecond))
	left := slices.DeleteFunc(slices.Clone(want), func(n string) bool { return n == gone })
	if got := targetsWithRequests(mfs); !slices.Equal(got, left) {
		t.Errorf("targets with requests after the rewrite: %v, want %v", got, left)
	}
	if v := mfs["llmprobe_discovery_targets"].Metric[0].GetGauge().GetValue(); v != 2 {
		t.Errorf("llmprobe_discovery_targets = %v after the rewrite, want 2", v)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"level=error", "config reloaded"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the log has %q:\n%s", bad, logs.String())
		}
	}
}

// TestDiscoveryShard: --shard=i/N shares discovered targets out by name
// as static ones: one simulator behind eight discovered names (relabelled
// __target_name__) and a static target; replica 0 of 2 probes exactly the
// names manager.Owner gives it, and llmprobe_shard_targets counts them.
func TestDiscoveryShard(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	addr := strings.TrimPrefix(base, "http://")
	dir := t.TempDir()
	o, url, _ := options(t)
	o.Shard = manager.Shard{Index: 0, Count: 2}
	var groups []string
	all := []string{"static"}
	for i := range 8 {
		groups = append(groups, fmt.Sprintf("{targets: [%q], labels: {__target_name__: n%d}}", addr, i))
		all = append(all, fmt.Sprintf("n%d", i))
	}
	cfg := fmt.Sprintf(`targets:
  - name: static
    base_url: %s
    probes: [{name: p, rate: 10}]
discovery:
  - name: names
    static_configs: [%s]
    target:
      probes: [{name: p, rate: 10}]
`, base, strings.Join(groups, ", "))
	setConfig(t, &o, dir, cfg)
	start(t, o)
	var owned []string
	for _, n := range all {
		if manager.Owner(n, 2) == 0 {
			owned = append(owned, n)
		}
	}
	slices.Sort(owned)
	if len(owned) == 0 || len(owned) == len(all) {
		t.Fatalf("the test needs names on both shards: %v of %v", owned, all)
	}
	testutil.Eventually(t, fmt.Sprintf("requests to exactly the owned targets %v", owned), func() bool {
		mfs := scrape(t, url)
		return slices.Equal(targetsWithRequests(mfs), owned) &&
			len(seriesOf(mfs, "llmprobe_shard_targets", map[string]string{"state": "owned"})) == 1 &&
			mfs["llmprobe_shard_targets"] != nil && shardGauge(mfs, "owned") == float64(len(owned)) &&
			shardGauge(mfs, "configured") == float64(len(all))
	})
}

// shardGauge is llmprobe_shard_targets{state}.
func shardGauge(mfs map[string]*dto.MetricFamily, state string) float64 {
	for _, m := range mfs["llmprobe_shard_targets"].GetMetric() {
		for _, lp := range m.Label {
			if lp.GetName() == "state" && lp.GetValue() == state {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

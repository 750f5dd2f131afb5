package discovery

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/config"
)

// entryConfig parses yml's first discovery entry.
func entryConfig(t *testing.T, yml string) config.DiscoveryConfig {
	t.Helper()
	c, err := config.Parse([]byte(yml), "llmprobe.yml")
	if err != nil {
		t.Fatal(err)
	}
	return c.Discovery[0]
}

// TestDeriveBounds: each discovered label set is derived or dropped with
// its reason and why; N2 (a label value over 16 MiB panicked in
// labels.Builder.Labels) and N10 (127.0.0.1: and : started targets) among
// them.
func TestDeriveBounds(t *testing.T) {
	cfg := entryConfig(t, `
discovery:
  - name: e
    static_configs: [{targets: [a:1]}]
    relabel_configs:
      - source_labels: [__meta_copy]
        regex: (.+)
        target_label: copied
`)
	huge := strings.Repeat("x", 16<<20+1)
	long := strings.Repeat("v", config.MaxDiscoveredLabelValueLen+1)
	f := func(name string, ls model.LabelSet, wantReason, wantWhy string) {
		t.Helper()
		tg, reason, err := derive(cfg, model.LabelSet{"group": "g"}, ls)
		if reason != wantReason {
			t.Errorf("%s: reason %q (%v), want %q", name, reason, err, wantReason)
			return
		}
		if wantReason == "" {
			if tg.Config.Name == "" {
				t.Errorf("%s: no target", name)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), wantWhy) {
			t.Errorf("%s: why %v, want it to contain %q", name, err, wantWhy)
		}
		if err != nil && len(err.Error()) > 512 {
			t.Errorf("%s: why is %d bytes long: a hostile label must not be quoted whole", name, len(err.Error()))
		}
	}
	f("plain", model.LabelSet{"__address__": "a:1"}, "", "")
	f("bare host", model.LabelSet{"__address__": "a"}, "", "")
	f("ipv6", model.LabelSet{"__address__": "[::1]:8000"}, "", "")
	f("value at the bound in a __ label", model.LabelSet{"__address__": "a:1", "__x": model.LabelValue(long[1:])}, "", "")
	f("huge __meta_ label unused", model.LabelSet{"__address__": "a:1", "__meta_big": model.LabelValue(huge)}, "", "")
	f("N2 huge kept label", model.LabelSet{"__address__": "a:1", "team": model.LabelValue(huge)},
		DropInvalid, "label \"team\": value of 16777217 bytes, at most 4096")
	f("N2 huge __meta_ copied by relabelling", model.LabelSet{"__address__": "a:1", "__meta_copy": model.LabelValue(huge)},
		DropInvalid, "label \"copied\": value of 16777217 bytes")
	f("N2 huge address", model.LabelSet{"__address__": model.LabelValue(huge)}, DropInvalid, "label \"__address__\": value of 16777217 bytes")
	f("value over the bound in a __ label", model.LabelSet{"__address__": "a:1", "__x": model.LabelValue(long)}, DropInvalid, "value of 4097 bytes")
	f("kept label over its own bound", model.LabelSet{"__address__": "a:1", "team": model.LabelValue(long[:200])}, DropInvalid, "labels.team: at most 128 bytes")
	f("long name", model.LabelSet{"__address__": "a:1", model.LabelName("n" + strings.Repeat("a", 256)): "v"}, DropInvalid, "257 bytes, at most 256")
	f("N10 empty port", model.LabelSet{"__address__": "127.0.0.1:"}, DropInvalid, "port in 1..65535, got port \"\"")
	f("N10 colon only", model.LabelSet{"__address__": ":"}, DropInvalid, "port in 1..65535")
	f("empty host", model.LabelSet{"__address__": ":8000"}, DropInvalid, "with a host, got none")
	f("port 0", model.LabelSet{"__address__": "a:0"}, DropInvalid, "got port \"0\"")
	f("port too big", model.LabelSet{"__address__": "a:65536"}, DropInvalid, "got port \"65536\"")
	f("port with a sign", model.LabelSet{"__address__": "a:+80"}, DropInvalid, "got port \"+80\"")
	f("port named", model.LabelSet{"__address__": "a:http"}, DropInvalid, "got port \"http\"")
	f("bare ipv6", model.LabelSet{"__address__": "::1"}, DropInvalid, "an IPv6 address in brackets")
	f("backslash", model.LabelSet{"__address__": `a\b:1`}, DropInvalid, "must be host:port")
	f("path", model.LabelSet{"__address__": "a:1/x"}, DropInvalid, "must be host:port")
}

// TestHTTPSDBounds runs http_sd against an httptest server listing a good
// target, one with a label value over the bound and the N10 addresses:
// only the good one starts, the others are counted as invalid.
func TestHTTPSDBounds(t *testing.T) {
	long := strings.Repeat("v", config.MaxDiscoveredLabelValueLen+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"targets": ["10.0.0.1:8000", "127.0.0.1:", ":"]},
			{"targets": ["10.0.0.2:8000"], "labels": {"__path_prefix__": "/%s"}}]`, long)
	}))
	defer srv.Close()
	r, _ := run(t, fleetSD(srv.URL+"/targets", ""))
	waitTargets(t, r, nil, "fleet:10.0.0.1:8000")
	if got := promtest.ToFloat64(r.metrics.dropped.WithLabelValues("fleet", DropInvalid)); got != 3 {
		t.Errorf("dropped{invalid} = %v, want 3 (127.0.0.1:, :, a __path_prefix__ over the bound)", got)
	}
}

// TestEntryShare: an entry whose source lists far more than its max_targets
// takes only those; the entry after it still gets all of its own (each
// entry's max_targets is reserved: config refuses a sum over
// MaxDiscoveredTargets).
func TestEntryShare(t *testing.T) {
	var many []string
	for i := range 1500 {
		many = append(many, fmt.Sprintf("h%d:1", i))
	}
	r, _ := run(t, fmt.Sprintf(`
discovery:
  - name: runaway
    static_configs: [{targets: [%s]}]
    max_targets: 990
  - name: small
    static_configs: [{targets: [s1:1, s2:1, s3:1]}]
    max_targets: 10
`, strings.Join(many, ", ")))
	var ts []Target
	testutil.Eventually(t, "990 targets of runaway and 3 of small", func() bool {
		ts = r.Targets(nil)
		n := 0
		for _, t := range ts {
			if t.Entry == "small" {
				n++
			}
		}
		return len(ts) == 993 && n == 3
	})
	if got := promtest.ToFloat64(r.metrics.dropped.WithLabelValues("runaway", DropMaxTargets)); got != 510 {
		t.Errorf("runaway dropped{max_targets} = %v, want 510", got)
	}
}

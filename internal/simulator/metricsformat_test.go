package simulator_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestMetricsFormat: --metrics-format text serves the text format whatever
// Accept says; openmetrics serves OpenMetrics 1.0 whatever Accept says (as
// vLLM's Rust frontend: counters typed by their base name, _total and
// _created samples, # EOF); protobuf serves protobuf when Accept asks for
// it and text otherwise. Each body decodes in its format to the same
// families.
func TestMetricsFormat(t *testing.T) {
	const (
		acceptProm = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,application/openmetrics-text;version=1.0.0;q=0.6,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
		acceptText = "text/plain;version=0.0.4"
		typeText   = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"
		typeOM     = "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"
		typeProto  = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores"
		noneAccept = ""
	)
	tests := []struct {
		format, accept, want string
	}{
		{"", acceptProm, typeText},
		{simulator.MetricsFormatText, acceptProm, typeText},
		{simulator.MetricsFormatText, noneAccept, typeText},
		{simulator.MetricsFormatOpenMetrics, acceptProm, typeOM},
		{simulator.MetricsFormatOpenMetrics, acceptText, typeOM},
		{simulator.MetricsFormatOpenMetrics, noneAccept, typeOM},
		{simulator.MetricsFormatProtobuf, acceptProm, typeProto},
		{simulator.MetricsFormatProtobuf, acceptText, typeText},
		{simulator.MetricsFormatProtobuf, noneAccept, typeText},
	}
	for _, tt := range tests {
		t.Run(tt.format+" accept "+strings.SplitN(tt.accept, ";", 2)[0], func(t *testing.T) {
			cfg := fastConfig()
			cfg.MetricsFormat = tt.format
			base, _ := simtest.Start(t, cfg)
			req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			ct := resp.Header.Get("Content-Type")
			if ct != tt.want {
				t.Fatalf("Content-Type %q, want %q", ct, tt.want)
			}
			if tt.want == typeOM {
				s := string(body)
				for _, w := range []string{"# TYPE vllm:request_success counter\n", "# TYPE vllm:prompt_tokens counter\n",
					"vllm:prompt_tokens_total{", "vllm:prompt_tokens_created{", "\n# EOF\n"} {
					if !strings.Contains(s, w) {
						t.Errorf("OpenMetrics body lacks %q", w)
					}
				}
				return
			}
			dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.Format(ct))
			names := map[string]bool{}
			for {
				var mf dto.MetricFamily
				if err := dec.Decode(&mf); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("decode %s: %v", ct, err)
				}
				names[mf.GetName()] = true
			}
			for _, n := range []string{"vllm:prompt_tokens_total", "vllm:time_to_first_token_seconds", "vllm:cache_config_info"} {
				if !names[n] {
					t.Errorf("no %s in the %s body", n, ct)
				}
			}
		})
	}
	cfg := simulator.DefaultConfig()
	cfg.MetricsFormat = "xml"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `--metrics-format must be one of text, openmetrics, protobuf, got "xml"`) {
		t.Errorf("Validate: %v", err)
	}
}

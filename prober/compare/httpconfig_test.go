package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
)

// httpField is the http_config field FieldsOf extracts from a fingerprint
// whose target went through cfg.
func httpField(t *testing.T, cfg config.HTTPClientConfig) string {
	t.Helper()
	fp := fingerprint.New(nil, time.Unix(0, 0))
	fp.Target.HTTPConfig = fingerprint.SummarizeHTTP("https://gw.example:8443", cfg, false)
	v, ok := FieldsOf(fp)[FieldHTTPConfig]
	if !ok {
		t.Fatalf("FieldsOf left http_config out: %+v", FieldsOf(fp))
	}
	return v
}

// TestCompareHTTPConfig: sides whose HTTP configs send different header
// names are inconclusive naming http_config (and both values, names only),
// unless declared in --vary; identical configs are no difference; a side
// without the record (an older run) is not-recorded, which http_config does
// not require.
func TestCompareHTTPConfig(t *testing.T) {
	headers := func(names ...string) config.HTTPClientConfig {
		h := &config.Headers{Headers: map[string]config.Header{}}
		for _, n := range names {
			h.Headers[n] = config.Header{Secrets: []config.Secret{"value-of-" + config.Secret(n)}}
		}
		return config.HTTPClientConfig{HTTPHeaders: h}
	}
	a, b := httpField(t, headers("X-Gateway-Key")), httpField(t, headers("X-Gateway-Key", "X-Tenant"))
	if a == b || !strings.Contains(b, "headers=X-Gateway-Key,X-Tenant") || strings.Contains(b, "value-of") {
		t.Fatalf("http_config fields %q and %q", a, b)
	}
	base := sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 20, fields: map[string]string{FieldHTTPConfig: a}}
	other := base
	other.seed, other.fields = 99, map[string]string{FieldHTTPConfig: b}
	o := defaultOpts(t)
	v := Compare(buildSide(base), buildSide(other), o)
	r := rule(v, RuleFingerprint)
	if v.Outcome != OutcomeInconclusive || r.Status != StatusFailed ||
		!strings.Contains(r.Detail, "http_config differs (baseline "+a+", candidate "+b+")") ||
		!strings.Contains(r.Next, "--vary endpoint,http_config") {
		t.Fatalf("different header names: %s, rule %+v", v.Outcome, r)
	}
	o.Vary = []string{FieldEndpoint, FieldHTTPConfig}
	if v := Compare(buildSide(base), buildSide(other), o); v.Outcome != OutcomePass {
		t.Fatalf("declared http_config: %s %v", v.Outcome, v.Reasons)
	}
	same := base
	same.seed, same.fields = 99, map[string]string{FieldHTTPConfig: httpField(t, headers("x-gateway-key"))}
	if v := Compare(buildSide(base), buildSide(same), defaultOpts(t)); v.Outcome != OutcomePass {
		t.Fatalf("identical http configs: %s %v", v.Outcome, v.Reasons)
	}
	old := base
	old.seed, old.fields = 99, map[string]string{FieldHTTPConfig: ""}
	v = Compare(buildSide(base), buildSide(old), defaultOpts(t))
	if v.Outcome != OutcomePass {
		t.Fatalf("one side without http_config: %s %v", v.Outcome, v.Reasons)
	}
	for _, f := range v.Fields {
		if f.Field == FieldHTTPConfig && f.Status != FieldNotRecorded {
			t.Errorf("http_config status %s, want not-recorded", f.Status)
		}
	}
}

package rundir

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
)

// TestRunOllamaShowMissing sweeps the Ollama persona behind a gateway
// that answers 404 to POST /api/show (Ollama's own body for a model it
// has not pulled): the sweep completes, the fingerprint's engine_config is
// not-recorded with target.not_recorded naming the call, status and class,
// and analysis.md prints that reason beside it.
func TestRunOllamaShowMissing(t *testing.T) {
	sc := simtest.Fast()
	sc.Engine = simulator.EngineOllama
	sim, _ := simtest.Start(t, sc)
	u, err := url.Parse(sim)
	if err != nil {
		t.Fatal(err)
	}
	proxy := simtest.Proxy(u)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/show" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"model 'llmprobe-sim' not found"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gw.Close)
	cfg := testConfig(t, gw.URL)
	cfg.Rates, cfg.RatesText = []float64{50}, "50"
	res := mustRun(t, cfg, testOptions(t))
	m := verifyClean(t, res.Dir)
	tg := m.Fingerprint.Target
	const why = "POST /api/show: HTTP 404 Not Found (http_4xx)"
	if tg.EngineConfig != nil || tg.NotRecorded["engine_config"] != why || tg.ServerVersion != simulator.VersionOllama {
		t.Errorf("engine_config %v, not_recorded %v, server_version %q", tg.EngineConfig, tg.NotRecorded, tg.ServerVersion)
	}
	if _, ok := tg.NotRecorded["server_version"]; ok {
		t.Errorf("server_version was recorded, yet not_recorded names it: %v", tg.NotRecorded)
	}
	b := mustRead(t, filepath.Join(res.Dir, "analysis.md"))
	if want := "| engine config | " + fingerprint.NotRecorded + " (" + why + ") |"; !strings.Contains(string(b), want) {
		t.Errorf("analysis.md lacks %q", want)
	}
}

package fingerprint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestShellJoin(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"plain", []string{"llmprobe", "sweep", "--rates=1,2,4"}, "llmprobe sweep --rates=1,2,4"},
		{"spaces and quotes", []string{"a b", "it's", ""}, `'a b' 'it'\''s' ''`},
		{"redacted marker", []string{"--api-key=<redacted>"}, `'--api-key=<redacted>'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShellJoin(tc.in); got != tc.want {
				t.Errorf("ShellJoin = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIntAndLabelsJSON(t *testing.T) {
	type doc struct {
		N Int    `json:"n"`
		L Labels `json:"l"`
	}
	tests := []struct {
		name string
		in   doc
		want string
	}{
		{"not recorded", doc{}, `{"n":"not-recorded","l":"not-recorded"}`},
		{"recorded", doc{N: Known(4096), L: Labels{"block_size": "16"}}, `{"n":4096,"l":{"block_size":"16"}}`},
		{"recorded zero and empty", doc{N: Known(0), L: Labels{}}, `{"n":0,"l":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("marshal = %s, want %s", b, tc.want)
			}
			var back doc
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.in) {
				t.Errorf("round trip = %+v, want %+v", back, tc.in)
			}
		})
	}
	t.Run("other strings are rejected", func(t *testing.T) {
		var d doc
		if err := json.Unmarshal([]byte(`{"n":"4096"}`), &d); err == nil {
			t.Error("Int accepted a string that is not not-recorded")
		}
		if err := json.Unmarshal([]byte(`{"l":"x"}`), &d); err == nil {
			t.Error("Labels accepted a string that is not not-recorded")
		}
	})
}

func TestHashWorkload(t *testing.T) {
	type spec struct {
		B int            `json:"b"`
		A string         `json:"a"`
		M map[string]int `json:"m"`
	}
	w1, err := HashWorkload(spec{B: 1, A: "x", M: map[string]int{"z": 1, "y": 2}}, "flags")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(w1.Spec), `{"a":"x","b":1,"m":{"y":2,"z":1}}`; got != want {
		t.Errorf("canonical = %s, want %s", got, want)
	}
	// The same content as a generic map hashes the same.
	w2, err := HashWorkload(map[string]any{"m": map[string]int{"y": 2, "z": 1}, "b": 1, "a": "x"}, "flags")
	if err != nil {
		t.Fatal(err)
	}
	if w1.SHA256 != w2.SHA256 || len(w1.SHA256) != 64 {
		t.Errorf("hashes differ or malformed: %s vs %s", w1.SHA256, w2.SHA256)
	}
	w3, err := HashWorkload(spec{B: 2, A: "x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if w3.SHA256 == w1.SHA256 {
		t.Error("different workloads hash the same")
	}
	if w3.Source != NotRecorded {
		t.Errorf("empty source = %q, want not-recorded", w3.Source)
	}
	if _, err := HashWorkload(func() {}, "x"); err == nil {
		t.Error("an unencodable workload gave no error")
	}
}

func TestCPUModel(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6338\n", "Intel(R) Xeon(R) Gold 6338"},
		{"arm with hardware", "processor\t: 0\nBogoMIPS\t: 48.00\nHardware\t: BCM2835\n", "BCM2835"},
		{"old arm processor line", "Processor\t: ARMv7 Processor rev 4 (v7l)\nprocessor\t: 0\n", "ARMv7 Processor rev 4 (v7l)"},
		{"no model", "processor\t: 0\nBogoMIPS\t: 48.00\n", NotRecorded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := cpuModel(p); got != tc.want {
				t.Errorf("cpuModel = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if got := cpuModel(filepath.Join(dir, "absent")); got != NotRecorded {
			t.Errorf("cpuModel = %q, want not-recorded", got)
		}
	})
}

func TestRevisionAndVersion(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"},
	}}
	clean := &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "def456"}}}
	tests := []struct {
		name             string
		set              string
		bi               *debug.BuildInfo
		ok               bool
		wantRev, wantVer string
	}{
		{"ldflags win", "fromldflags", bi, true, "fromldflags", "fromldflags"},
		{"dirty vcs", "", bi, true, "abc123-modified", NotRecorded},
		{"clean vcs and module version", "", clean, true, "def456", "v0.2.0"},
		{"no vcs info", "", &debug.BuildInfo{}, true, NotRecorded, NotRecorded},
		{"no build info", "", nil, false, NotRecorded, NotRecorded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := revision(tc.set, tc.bi, tc.ok); got != tc.wantRev {
				t.Errorf("revision = %q, want %q", got, tc.wantRev)
			}
			if got := toolVersion(tc.set, tc.bi, tc.ok); got != tc.wantVer {
				t.Errorf("toolVersion = %q, want %q", got, tc.wantVer)
			}
		})
	}
}

func TestNewNotRecorded(t *testing.T) {
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	fp := New([]string{"llmprobe", "sweep", "--api-key=sk-1"}, start)
	if fp.Start.Location() != time.UTC || !fp.Start.Equal(start) {
		t.Errorf("Start = %v, want %v in UTC", fp.Start, start)
	}
	if fp.Command[2] != "--api-key=<redacted>" {
		t.Errorf("command not redacted: %q", fp.Command)
	}
	if fp.Client.Cores < 1 || fp.Client.GoVersion == "" || fp.Tool.GoVersion == "" {
		t.Errorf("host not read: %+v", fp.Client)
	}
	b, err := json.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	target := m["target"].(map[string]any)
	for _, k := range []string{"url", "api", "model", "served_model", "root", "max_model_len", "max_model_len_source",
		"server_version", "engine", "engine_source", "engine_config", "tokenizer", "metrics_url"} {
		if target[k] != NotRecorded {
			t.Errorf("target.%s = %v, want not-recorded", k, target[k])
		}
	}
	if w := m["workload"].(map[string]any); w["sha256"] != NotRecorded {
		t.Errorf("workload.sha256 = %v, want not-recorded", w["sha256"])
	}
}

func TestEngineConfig(t *testing.T) {
	tests := []struct {
		name    string
		metrics string
		want    Labels
	}{
		{
			name: "vllm exposition",
			metrics: `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="llama"} 0.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="1",gpu_memory_utilization="0.9"} 1.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9"} 1.0
this line is { not valid exposition
`,
			want: Labels{"block_size": "16", "cache_dtype": "auto", "enable_prefix_caching": "True", "engine": "0", "gpu_memory_utilization": "0.9"},
		},
		{name: "absent", metrics: "vllm:num_requests_running 0\n", want: nil},
		{name: "empty", metrics: "", want: nil},
		{name: "unparsable series", metrics: `vllm:cache_config_info{block_size="16" 1` + "\n", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EngineConfig([]byte(tc.metrics))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("EngineConfig = %v, want %v", got, tc.want)
			}
		})
	}
}

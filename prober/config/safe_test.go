package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const (
	goodA = "targets:\n  - name: a\n    base_url: http://127.0.0.1:8000\n"
	goodB = "targets:\n  - name: b\n    base_url: http://127.0.0.1:8001\n"
	bad   = "targets:\n  - name: a\n    base_url: http://127.0.0.1:8000\n    probes:\n      - {name: p, rate: -1}\n"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSafeConfigReload(t *testing.T) {
	reg := prometheus.NewRegistry()
	sc := NewSafeConfig(reg)
	clock := time.Unix(1700000000, 0)
	sc.now = func() time.Time { return clock }
	path := filepath.Join(t.TempDir(), "llmprobe.yml")

	expo := func(ok, ts string) string {
		return `
# HELP llmprobe_config_last_reload_success_timestamp_seconds Unix time of the last successful configuration load or reload.
# TYPE llmprobe_config_last_reload_success_timestamp_seconds gauge
llmprobe_config_last_reload_success_timestamp_seconds ` + ts + `
# HELP llmprobe_config_last_reload_successful Whether the last configuration load or reload succeeded (1) or failed (0).
# TYPE llmprobe_config_last_reload_successful gauge
llmprobe_config_last_reload_successful ` + ok + `
`
	}
	steps := []struct {
		name      string
		content   string // written before the reload; "" removes the file
		wantErr   string // suffix of the error; "" for success
		wantName  string // target of Get() afterwards; "" for nil
		wantExpo  string
		clockStep time.Duration
	}{
		{"missing file before any load", "", "llmprobe.yml: no such file or directory", "", expo("0", "0"), 0},
		{"first load", goodA, "", "a", expo("1", "1.7e+09"), 0},
		{"invalid file keeps the old config", bad, "targets[0].probes[0].rate: must be > 0, got -1", "a", expo("0", "1.7e+09"), time.Minute},
		{"valid file swaps", goodB, "", "b", expo("1", "1.70000012e+09"), time.Minute},
		{"file removed keeps the old config", "", "no such file or directory", "b", expo("0", "1.70000012e+09"), 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clock = clock.Add(s.clockStep)
			if s.content == "" {
				os.Remove(path)
			} else {
				writeFile(t, path, s.content)
			}
			err := sc.Reload(path)
			switch {
			case s.wantErr == "" && err != nil:
				t.Fatalf("Reload: %v", err)
			case s.wantErr != "" && (err == nil || !strings.HasSuffix(err.Error(), s.wantErr)):
				t.Fatalf("Reload error: got %v, want suffix %q", err, s.wantErr)
			}
			got := ""
			if c := sc.Get(); c != nil {
				got = c.Targets[0].Name
			}
			if got != s.wantName {
				t.Errorf("Get(): target %q, want %q", got, s.wantName)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(s.wantExpo)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSafeConfigReloadWith(t *testing.T) {
	sc := NewSafeConfig(nil)
	path := filepath.Join(t.TempDir(), "llmprobe.yml")
	writeFile(t, path, goodA)
	if err := sc.Reload(path); err != nil {
		t.Fatal(err)
	}
	old := sc.Get()
	writeFile(t, path, goodB)

	applyErr := errors.New("cannot start probes")
	var seen *Config
	err := sc.ReloadWith(path, func(c *Config) error {
		seen = c
		if sc.Get() != old {
			t.Error("the new config is visible before apply returned")
		}
		return applyErr
	})
	if !errors.Is(err, applyErr) {
		t.Fatalf("ReloadWith: got %v, want %v", err, applyErr)
	}
	if seen == nil || seen.Targets[0].Name != "b" {
		t.Fatalf("apply got %v", seen)
	}
	if sc.Get() != old {
		t.Error("a config whose apply failed was installed")
	}
	if v := testutil.ToFloat64(sc.success); v != 0 {
		t.Errorf("success gauge %v after a failed apply", v)
	}

	if err := sc.ReloadWith(path, func(*Config) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if sc.Get().Targets[0].Name != "b" || testutil.ToFloat64(sc.success) != 1 {
		t.Errorf("successful ReloadWith not installed")
	}

	sc.MarkFailed()
	if testutil.ToFloat64(sc.success) != 0 || sc.Get().Targets[0].Name != "b" {
		t.Error("MarkFailed must only flip the gauge")
	}
	c, err := ForTarget("http://127.0.0.1:9", "", "")
	if err != nil {
		t.Fatal(err)
	}
	sc.Set(c)
	if sc.Get() != c || testutil.ToFloat64(sc.success) != 1 {
		t.Error("Set did not install the config")
	}
}

// TestSafeConfigConcurrent runs readers against reloads (meaningful under -race).
func TestSafeConfigConcurrent(t *testing.T) {
	sc := NewSafeConfig(prometheus.NewRegistry())
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.yml"), filepath.Join(dir, "b.yml"), filepath.Join(dir, "bad.yml")}
	writeFile(t, paths[0], goodA)
	writeFile(t, paths[1], goodB)
	writeFile(t, paths[2], bad)
	if err := sc.Reload(paths[0]); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c := sc.Get(); c == nil || len(c.Targets) != 1 {
					t.Error("reader saw no config or a broken one")
					return
				}
			}
		}()
	}
	for i := range 60 {
		_ = sc.Reload(paths[i%3])
	}
	close(stop)
	wg.Wait()
}

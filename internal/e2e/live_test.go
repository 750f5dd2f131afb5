//go:build e2e && unix

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// The live end-to-end test (TestAlertmanagerLive): what it shortens, and
// nothing else. The rules' windows, thresholds and history guards are the
// shipped ones (no rewriteHistory: the stack is fresh, so the fast burn
// pages on its 15m/2m branch, as it does for any new probe or Prometheus);
// Alertmanager runs deploy/alertmanager/alertmanager.yml with its routing and
// inhibitions unchanged.
const (
	// liveEvery is Prometheus' scrape and rule evaluation interval.
	liveEvery = "2s"
	// liveForCap caps every alert's `for`: the 5m, 10m and 15m ones become
	// 2m (the 1m and 2m ones stay, so the fast burn's and
	// LLMProbeTargetFailing's race is the shipped one).
	liveForCap = 2 * time.Minute
	// liveKeepFiringFor replaces every alert's keep_firing_for (10m): still
	// far longer than the llmprobe restart the test makes, so no "resolved"
	// may come from it, but recoveries resolve in minutes.
	liveKeepFiringFor = time.Minute
	// Alertmanager's group_wait (30s) and group_interval (5m); its
	// repeat_interval (4h) stays, longer than the test, so any second
	// notification of a group is one the test counts.
	liveGroupWait     = 10 * time.Second
	liveGroupInterval = time.Minute

	// liveHealthyDefault is the healthy stretch unless LLMPROBE_E2E_HEALTHY
	// says otherwise (30m for the figure of issue 39), within
	// [liveHealthyMin, liveHealthyMax].
	liveHealthyDefault = 4 * time.Minute
	liveHealthyMin     = 30 * time.Second
	liveHealthyMax     = 6 * time.Hour
	// liveFaultsBudget is what the faults and recoveries after the healthy
	// stretch may take at most (about 13 minutes when all goes well).
	liveFaultsBudget = 25 * time.Minute

	// liveRestartGap is how long llmprobe stays down in its restart: a
	// third of keep_firing_for, and far from LLMProbeDown's `for`.
	liveRestartGap = 20 * time.Second

	// liveHookMaxBody bounds one webhook call's body.
	liveHookMaxBody = 1 << 20
)

var (
	liveForLine  = regexp.MustCompile(`(?m)^(\s+for:\s*)(\S+)\s*$`)
	liveKeepLine = regexp.MustCompile(`(?m)^(\s+keep_firing_for:\s*)(\S+)\s*$`)
)

// rewriteLive caps every `for` at liveForCap and sets every keep_firing_for
// to liveKeepFiringFor; it returns an error for a duration it cannot read.
func rewriteLive(data []byte) ([]byte, error) {
	var bad error
	out := liveForLine.ReplaceAllFunc(data, func(m []byte) []byte {
		sub := liveForLine.FindSubmatch(m)
		d, err := model.ParseDuration(string(sub[2]))
		if err != nil {
			bad = fmt.Errorf("for: %q: %w", sub[2], err)
			return m
		}
		if time.Duration(d) > liveForCap {
			d = model.Duration(liveForCap)
		}
		return []byte(string(sub[1]) + d.String())
	})
	out = liveKeepLine.ReplaceAll(out, []byte("${1}"+model.Duration(liveKeepFiringFor).String()))
	return out, bad
}

// copyRulesLive copies rules/*.yml (not the opt-in files) to dst through
// rewriteLive.
func copyRulesLive(t *testing.T, src, dst string) {
	t.Helper()
	copyRuleFiles(t, src, dst, func(p string, data []byte) []byte {
		out, err := rewriteLive(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return out
	})
}

// liveHealthy reads LLMPROBE_E2E_HEALTHY.
func liveHealthy() (time.Duration, error) {
	s := os.Getenv("LLMPROBE_E2E_HEALTHY")
	if s == "" {
		return liveHealthyDefault, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("LLMPROBE_E2E_HEALTHY=%q: not a duration (e.g. 30m): %v", s, err)
	}
	if d < liveHealthyMin || d > liveHealthyMax {
		return 0, fmt.Errorf("LLMPROBE_E2E_HEALTHY=%s: want %s to %s", d, liveHealthyMin, liveHealthyMax)
	}
	return d, nil
}

// liveNote is one webhook call of Alertmanager, stamped when it came.
type liveNote struct {
	at time.Time
	webhook
}

func (n liveNote) key() string { return n.Group["alertname"] + "{target=" + n.Group["target"] + "}" }

func (n liveNote) String() string {
	var names []string
	for _, a := range n.Alerts {
		names = append(names, fmt.Sprintf("%s%v:%s", a.Labels["alertname"], a.Labels, a.Status))
	}
	return fmt.Sprintf("%s %s at %s (%s)", n.Status, n.key(), n.at.UTC().Format("15:04:05"), strings.Join(names, ", "))
}

// hookLog is the webhook receiver's record.
type hookLog struct {
	mu    sync.Mutex
	notes []liveNote
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, liveHookMaxBody+1))
	var n liveNote
	if err == nil && len(body) > liveHookMaxBody {
		err = fmt.Errorf("body over %d bytes", liveHookMaxBody)
	}
	if err == nil {
		err = json.Unmarshal(body, &n)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		n = liveNote{webhook: webhook{Status: "unreadable: " + err.Error()}}
	}
	n.at = time.Now()
	h.mu.Lock()
	h.notes = append(h.notes, n)
	h.mu.Unlock()
}

func (h *hookLog) all() []liveNote {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.notes)
}

// find returns the first notification of group key with status since t.
func (h *hookLog) find(key, status string, since time.Time) (liveNote, bool) {
	for _, n := range h.all() {
		if n.key() == key && n.Status == status && !n.at.Before(since) {
			return n, true
		}
	}
	return liveNote{}, false
}

// loadavg returns the host's 1-minute load average ("n/a" without /proc).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "n/a"
	}
	return f[0]
}

// liveFault is one fault: the alert group that must notify once for it.
type liveFault struct {
	name, target, alert string
	injected, notified  time.Time
	restored, resolved  time.Time
}

func (f *liveFault) key() string { return f.alert + "{target=" + f.target + "}" }

// TestAlertmanagerLive is the live counterpart of
// TestAlertmanagerOnePagePerIncident (issue 39): simulators probed by a
// live `llmprobe serve`, a real Prometheus evaluating the shipped rules (see
// rewriteLive for what is shortened) and sending to a real Alertmanager
// running deploy/alertmanager/alertmanager.yml with a webhook receiver that
// counts notifications. A healthy stretch (LLMPROBE_E2E_HEALTHY, default
// 4m) must give none; then each fault, on its own target, exactly one
// firing and, after the simulator is restored, exactly one resolved
// notification of its group, and nothing else may notify:
//
//   - slow: 10 % of requests stall 2s before the first token (TTFT SLO
//     800ms): LLMProbeTTFTAboveSLO;
//   - down: the target's simulator killed (connection refused):
//     LLMProbeTargetFailing (its 5-minute window: injected right after slow,
//     its detection overlaps the others');
//   - burn: 90 % HTTP 500 on a target with two probes: one
//     LLMProbeGoodputBudgetBurnFast for the target; while it fires llmprobe
//     is restarted and the fault held for longer than keep_firing_for, so a
//     resolved/firing flip across the restart would be counted.
//
// Opt-in (LLMPROBE_E2E_LIVE=1, set by .ci/e2e-live.sh, `make e2e-live`): it
// takes about 13 minutes plus the healthy stretch.
func TestAlertmanagerLive(t *testing.T) {
	if os.Getenv("LLMPROBE_E2E_LIVE") == "" {
		t.Skip("set LLMPROBE_E2E_LIVE=1 to run it (make e2e-live)")
	}
	healthy, err := liveHealthy()
	if err != nil {
		t.Fatal(err)
	}
	if dl, ok := t.Deadline(); ok {
		if need := buildTimeout + healthy + liveFaultsBudget; time.Until(dl.Add(-deadlineMargin)) < need {
			t.Fatalf("go test -timeout leaves %s; a healthy stretch of %s needs %s (.ci/e2e-live.sh sets it from LLMPROBE_E2E_HEALTHY)",
				time.Until(dl.Add(-deadlineMargin)).Round(time.Second), healthy, need+deadlineMargin)
		}
	}
	promBin := lookPath(t, ".ci/e2e-live.sh", "prometheus", "prometheus")
	amBin := lookPath(t, ".ci/e2e-live.sh", "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
	prometheusMajor(t, promBin)
	root, dir, bin := setUp(t, "llmprobe-e2e-live-")

	hook := &hookLog{}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()

	// The simulators, one per fault (each fault its own target, so its
	// own alert group).
	simAddr := map[string]string{}
	sims := map[string]*proc{}
	startSim := func(name string, fault ...string) {
		t.Helper()
		args := append([]string{"simulate", "--web.listen-address", simAddr[name]}, fault...)
		label := "simulate-" + name
		if len(fault) > 0 {
			label += "-fault"
		}
		sims[name] = startUp(t, dir, label, bin, "http://"+simAddr[name]+"/health", args...)
	}
	for _, name := range []string{"slow", "down", "burn"} {
		simAddr[name] = testutil.FreeAddr(t)
		startSim(name)
	}

	serveAddr := testutil.FreeAddr(t)
	cfgPath := filepath.Join(dir, "llmprobe.yml")
	probe := func(name string, rate int) string { return probeYAML(name, rate, 16) }
	writeFile(t, cfgPath, fmt.Sprintf(`targets:
  - name: slow
    base_url: http://%s
    api: completions
    slo: {ttft: 800ms}
    # 10 %% slow requests burn a 2 %% budget 5x: the TTFT alert, not the burn.
    goodput_objective: 0.98
    probes:
%s  - name: down
    base_url: http://%s
    api: completions
    probes:
%s  - name: burn
    base_url: http://%s
    api: completions
    probes:
%s%s`, simAddr["slow"], probe("p", 4), simAddr["down"], probe("p", 2), simAddr["burn"], probe("p", 2), probe("q", 2)))
	serveArgs := []string{"serve", "--config.file", cfgPath, "--web.listen-address", serveAddr}
	serve := startUp(t, dir, "serve", bin, "http://"+serveAddr+"/-/ready", serveArgs...)

	amAddr, am := startAlertmanager(t, dir, amBin, alertmanagerConfig(t, filepath.Join(root, "deploy", "alertmanager", "alertmanager.yml"), hookSrv.URL,
		func(k string, d time.Duration) time.Duration {
			switch k {
			case "group_wait":
				return liveGroupWait
			case "group_interval":
				return liveGroupInterval
			}
			return d
		}))

	rulesDir := filepath.Join(dir, "rules")
	copyRulesLive(t, filepath.Join(root, "rules"), rulesDir)
	api := startPrometheus(t, dir, "prometheus", promBin, testutil.FreeAddr(t), promHead(liveEvery, rulesDir)+fmt.Sprintf(`alerting:
  alertmanagers:
    - static_configs:
        - targets: [%[1]q]
scrape_configs:
  - job_name: llmprobe
    static_configs:
      - targets: [%[2]q]
`, amAddr, serveAddr))
	prom := api.proc
	api.waitValue(t, `count(target_probe:llmprobe_requests:rate5m)`, valuesTimeout, equals(4))
	api.checkRulesHealthy(t)
	t.Logf("stack up: %d CPUs, load average %s; for: capped at %s, keep_firing_for %s, group_wait %s, group_interval %s, scrape/eval every %s",
		runtime.NumCPU(), loadavg(), liveForCap, liveKeepFiringFor, liveGroupWait, liveGroupInterval, liveEvery)

	// downKilled: the killed simulator is no exit to fail on.
	downKilled := false
	procs := func() []*proc {
		ps := []*proc{serve, prom, am, sims["slow"], sims["burn"]}
		if !downKilled {
			ps = append(ps, sims["down"])
		}
		return ps
	}
	// alive fails when a process the test did not stop exited.
	alive := func() {
		t.Helper()
		for _, p := range procs() {
			if p.exited() {
				t.Fatalf("%s exited: %v%s", p.name, p.err, logs(p))
			}
		}
	}
	// waitNote waits for the first notification of key with status since
	// since.
	waitNote := func(key, status string, since time.Time, timeout time.Duration) liveNote {
		t.Helper()
		end, capped := until(timeout)
		for {
			if n, ok := hook.find(key, status, since); ok {
				t.Logf("notified: %s", n)
				return n
			}
			alive()
			if time.Now().After(end) {
				var firing []string
				for _, a := range api.alerts(t) {
					firing = append(firing, fmt.Sprintf("%s%v %s", a.Labels["alertname"], a.Labels, a.State))
				}
				t.Fatalf("no %s notification of %s after %s%s; notifications: %v; Prometheus alerts now: %v%s",
					status, key, timeout, cappedNote(capped), hook.all(), firing, logs(procs()...))
			}
			time.Sleep(2 * time.Second)
		}
	}

	// 1. The healthy stretch: no notification at all.
	healthyStart := time.Now()
	var loads, allLoads []string
	end, capped := until(healthy)
	if capped {
		t.Fatalf("no time left for a healthy stretch of %s%s", healthy, cappedNote(capped))
	}
	for time.Now().Before(end) {
		alive()
		if len(loads) == 0 || time.Since(healthyStart) >= time.Duration(len(loads))*time.Minute {
			loads = append(loads, loadavg())
		}
		time.Sleep(2 * time.Second)
	}
	healthyEnd := time.Now()
	// The load average of every minute after it, for the figures.
	loadDone := make(chan struct{})
	var loadMu sync.Mutex
	go func() {
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for {
			select {
			case <-loadDone:
				return
			case <-tick.C:
				loadMu.Lock()
				allLoads = append(allLoads, loadavg())
				loadMu.Unlock()
			}
		}
	}()
	defer close(loadDone)
	healthyNotes := hook.all()
	t.Logf("healthy stretch: %s, %d notification(s) %v; load average each minute: %s",
		healthy, len(healthyNotes), healthyNotes, strings.Join(loads, " "))

	faults := map[string]*liveFault{
		"slow": {name: "slow TTFT (10 % of requests stall 2s)", target: "slow", alert: "LLMProbeTTFTAboveSLO"},
		"down": {name: "target killed", target: "down", alert: "LLMProbeTargetFailing"},
		"burn": {name: "90 % HTTP 500 on two probes, llmprobe restarted while it fires", target: "burn", alert: "LLMProbeGoodputBudgetBurnFast"},
	}
	restore := func(f *liveFault) {
		t.Helper()
		stop(t, sims[f.target])
		startSim(f.target)
		f.restored = time.Now()
	}

	// 2. slow TTFT, then the kill at once (its 5-minute window overlaps).
	slow, down, burn := faults["slow"], faults["down"], faults["burn"]
	stop(t, sims["slow"])
	startSim("slow", "--fault.stall-before-first-token", "0.1", "--fault.stall-duration", "2s")
	slow.injected = time.Now()
	stop(t, sims["down"])
	downKilled = true
	down.injected = time.Now()
	slow.notified = waitNote(slow.key(), "firing", slow.injected, 8*time.Minute).at
	restore(slow)

	// 3. The burn on two probes; llmprobe restarted while it fires.
	stop(t, sims["burn"])
	startSim("burn", "--fault.http-500", "0.9")
	burn.injected = time.Now()
	burn.notified = waitNote(burn.key(), "firing", burn.injected, 8*time.Minute).at
	// llmprobe down until Prometheus has seen it down (its series stale) and
	// for liveRestartGap at least, then started again: its counters from 0.
	stop(t, serve)
	restartAt := time.Now()
	api.waitValue(t, `up{job="llmprobe"}`, valuesTimeout, equals(0))
	for time.Since(restartAt) < liveRestartGap {
		time.Sleep(time.Second)
	}
	serve = start(t, dir, "serve-restarted", bin, serveArgs...)
	waitHTTP(t, serve, "http://"+serveAddr+"/-/ready")
	t.Logf("llmprobe down %s (unscraped) while %s fires, then restarted", time.Since(restartAt).Round(time.Second), burn.key())
	// Hold the fault longer than keep_firing_for: the alert must stay firing
	// on the restarted llmprobe's series, not only on keep_firing_for.
	holdEnd := time.Now().Add(liveKeepFiringFor + 30*time.Second)
	for time.Now().Before(holdEnd) {
		alive()
		firing := false
		for _, a := range api.firing(t, burn.alert) {
			firing = firing || a.Labels["target"] == "burn"
		}
		if !firing {
			t.Fatalf("%s stopped firing %s after llmprobe's restart, with the fault still on%s", burn.key(), time.Since(restartAt).Round(time.Second), logs(serve, prom))
		}
		time.Sleep(2 * time.Second)
	}
	restore(burn)

	// 4. The killed target's page, then its recovery.
	down.notified = waitNote(down.key(), "firing", down.injected, 10*time.Minute).at
	restore(down)
	downKilled = false

	// 5. Every fault's resolved notification, then one more group_interval
	// and a margin for anything else to arrive.
	for _, k := range []string{"slow", "burn", "down"} {
		f := faults[k]
		f.resolved = waitNote(f.key(), "resolved", f.restored, 10*time.Minute).at
	}
	quietEnd := time.Now().Add(liveGroupInterval + 15*time.Second)
	for time.Now().Before(quietEnd) {
		alive()
		time.Sleep(2 * time.Second)
	}

	// The count: per fault one firing after its injection and one resolved
	// after its restore; nothing in the healthy stretch; nothing else.
	notes := hook.all()
	for _, n := range notes {
		if !n.at.After(healthyEnd) {
			t.Errorf("notification during the healthy stretch: %s", n)
		}
	}
	for _, k := range []string{"slow", "down", "burn"} {
		f := faults[k]
		var firing, resolved []liveNote
		for _, n := range notes {
			if n.key() != f.key() {
				continue
			}
			if n.Status == "firing" {
				firing = append(firing, n)
			} else {
				resolved = append(resolved, n)
			}
		}
		t.Logf("fault %q on target %s: %d firing, %d resolved notification(s) of %s; notified %s after the fault, resolved %s after the restore",
			f.name, f.target, len(firing), len(resolved), f.key(),
			f.notified.Sub(f.injected).Round(time.Second), f.resolved.Sub(f.restored).Round(time.Second))
		if len(firing) != 1 || len(resolved) != 1 {
			t.Errorf("fault %q: want 1 firing and 1 resolved notification of %s, got firing %v, resolved %v", f.name, f.key(), firing, resolved)
		}
		for _, n := range resolved {
			if n.at.Before(f.restored) {
				t.Errorf("fault %q: resolved before the simulator was restored (%s): %s", f.name, f.restored.UTC().Format("15:04:05"), n)
			}
		}
	}
	for _, n := range notes {
		if n.key() != slow.key() && n.key() != down.key() && n.key() != burn.key() {
			t.Errorf("a notification no fault accounts for: %s", n)
			if n.Group["alertname"] == "LLMProbeProberSaturated" {
				// The host, not a fault: say how late llmprobe sent.
				var late []string
				for _, s := range api.query(t, `target_probe:llmprobe_requests_sent_late:ratio_rate10m`) {
					late = append(late, fmt.Sprintf("%s/%s %.3f", s.Metric["target"], s.Metric["probe"], s.float()))
				}
				t.Logf("share of sends more than 10ms late over 10 minutes now: %s; host load average each minute of the healthy stretch %s, now %s (%d CPUs)",
					strings.Join(late, ", "), strings.Join(loads, " "), loadavg(), runtime.NumCPU())
			}
		}
	}
	// What fired in Prometheus (muted by inhibition or routed to null:
	// not notified), for the record.
	span := int(time.Since(healthyStart).Seconds()) + 60
	var fired []string
	for _, s := range api.query(t, fmt.Sprintf(`max by (alertname, target) (max_over_time(ALERTS{alertstate="firing"}[%ds]))`, span)) {
		fired = append(fired, s.Metric["alertname"]+"{target="+s.Metric["target"]+"}")
	}
	slices.Sort(fired)
	t.Logf("alerts that fired in Prometheus during the test: %v", fired)
	loadMu.Lock()
	after := strings.Join(allLoads, " ")
	loadMu.Unlock()
	t.Logf("figures: healthy %s with %d notifications (load average each minute %s); %d notifications in all for %d faults (load average each minute after the healthy stretch %s); %s in all",
		healthy, len(healthyNotes), strings.Join(loads, " "), len(notes), len(faults), after, time.Since(healthyStart).Round(time.Second))
}

// alerts returns every alert of Prometheus, pending and firing.
func (a *promAPI) alerts(t *testing.T) []alert {
	t.Helper()
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	a.get(t, "/api/v1/alerts", nil, &data)
	return data.Alerts
}

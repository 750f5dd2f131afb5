package deploy

import (
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/config"
)

// composeDir is deploy/compose, seen from this package's directory.
const composeDir = "compose"

// The parts of the demo's Prometheus, Alertmanager and Grafana files the
// demo uses, decoded strictly (LoadStrict) so that a misspelt key fails.
type (
	promConfig struct {
		Global struct {
			ScrapeInterval     string `json:"scrape_interval"`
			EvaluationInterval string `json:"evaluation_interval"`
		} `json:"global"`
		RuleFiles []string `json:"rule_files"`
		Alerting  struct {
			Alertmanagers []struct {
				StaticConfigs []staticConfig `json:"static_configs"`
			} `json:"alertmanagers"`
		} `json:"alerting"`
		ScrapeConfigs []struct {
			JobName       string         `json:"job_name"`
			MetricsPath   string         `json:"metrics_path,omitempty"`
			StaticConfigs []staticConfig `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	alertmanagerConfig struct {
		Route struct {
			Receiver       string    `json:"receiver"`
			GroupBy        []string  `json:"group_by"`
			GroupWait      string    `json:"group_wait"`
			GroupInterval  string    `json:"group_interval"`
			RepeatInterval string    `json:"repeat_interval"`
			Routes         []amRoute `json:"routes"`
		} `json:"route"`
		Receivers []struct {
			Name string `json:"name"`
		} `json:"receivers"`
		InhibitRules []inhibitRule `json:"inhibit_rules"`
	}
	amRoute struct {
		Matchers []string `json:"matchers"`
		Receiver string   `json:"receiver"`
	}
	inhibitRule struct {
		SourceMatchers []string `json:"source_matchers"`
		TargetMatchers []string `json:"target_matchers"`
		Equal          []string `json:"equal"`
	}
	grafanaDatasources struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name      string `json:"name"`
			UID       string `json:"uid"`
			Type      string `json:"type"`
			Access    string `json:"access"`
			URL       string `json:"url"`
			IsDefault bool   `json:"isDefault"`
			Editable  bool   `json:"editable"`
		} `json:"datasources"`
	}
	grafanaDashboards struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name            string `json:"name"`
			Folder          string `json:"folder"`
			Type            string `json:"type"`
			DisableDeletion bool   `json:"disableDeletion"`
			AllowUIUpdates  bool   `json:"allowUiUpdates"`
			Options         struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
)

// composeStack is the decoded compose file with each service's mounts,
// keyed by the container path.
type composeStack struct {
	*Compose
	mounts map[string]map[string]Mount
}

func loadStack(t *testing.T) composeStack {
	t.Helper()
	c, err := LoadCompose(filepath.Join(composeDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := composeStack{Compose: c, mounts: map[string]map[string]Mount{}}
	for _, name := range []string{"simulator", "llmprobe", "prometheus", "grafana", "alertmanager"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("compose.yaml has no service %s", name)
		}
	}
	for name, svc := range c.Services {
		ms, err := svc.Mounts()
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		s.mounts[name] = map[string]Mount{}
		for _, m := range ms {
			s.mounts[name][m.Target] = m
		}
	}
	return s
}

// hostFile returns the host path (relative to this package) of the file
// service mounts at target; the test fails when there is none.
func (s composeStack) hostFile(t *testing.T, service, target string) string {
	t.Helper()
	m, ok := s.mounts[service][target]
	if !ok || !m.Bind() {
		t.Fatalf("service %s does not bind-mount %s (mounts: %v)", service, target, s.mounts[service])
	}
	return filepath.Join(composeDir, filepath.FromSlash(m.Source))
}

func TestComposeMountsExist(t *testing.T) {
	s := loadStack(t)
	n := 0
	for name, ms := range s.mounts {
		for _, m := range ms {
			if !m.Bind() {
				if _, ok := s.Volumes[m.Source]; !ok {
					t.Errorf("service %s mounts volume %q, which compose.yaml does not declare", name, m.Source)
				}
				continue
			}
			n++
			if !m.ReadOnly {
				t.Errorf("service %s: bind mount %s must be read-only (:ro)", name, m.Source)
			}
			fi, err := os.Stat(filepath.Join(composeDir, filepath.FromSlash(m.Source)))
			if err != nil || !fi.Mode().IsRegular() {
				t.Errorf("service %s mounts %s, which is not a file next to compose.yaml: %v", name, m.Source, err)
			}
		}
		svc := s.Services[name]
		if svc.Build != nil {
			if fi, err := os.Stat(filepath.Join(composeDir, svc.Build.Context, "Dockerfile")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("service %s builds %s, which has no Dockerfile: %v", name, svc.Build.Context, err)
			}
		}
		for _, dep := range svc.DependsOn {
			if _, ok := s.Services[dep]; !ok {
				t.Errorf("service %s depends on %s, which does not exist", name, dep)
			}
		}
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %s on every interface; bind it to 127.0.0.1", name, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("no bind mount checked")
	}
}

// TestComposePrometheus checks the demo's Prometheus: it loads every rule
// file of rules/ (mounted from there, the one source), scrapes llmprobe and
// the simulator with the target join label, and alerts to Alertmanager.
func TestComposePrometheus(t *testing.T) {
	s := loadStack(t)
	var pc promConfig
	if err := LoadStrict(s.hostFile(t, "prometheus", "/etc/prometheus/prometheus.yml"), &pc); err != nil {
		t.Fatal(err)
	}
	files := ruleFiles(t)
	if len(pc.RuleFiles) != len(files) {
		t.Errorf("prometheus.yml loads %d rule files, want the %d of rules/", len(pc.RuleFiles), len(files))
	}
	for _, f := range files {
		i := slices.IndexFunc(pc.RuleFiles, func(p string) bool { return path.Base(p) == f.Name })
		if i < 0 {
			t.Errorf("prometheus.yml does not load %s", f.Name)
			continue
		}
		host := s.hostFile(t, "prometheus", pc.RuleFiles[i])
		if want := filepath.Join("..", "rules", f.Name); filepath.Clean(host) != want {
			t.Errorf("%s is mounted from %s, want %s (the one source)", f.Name, host, want)
		}
		data, err := os.ReadFile(host)
		if err != nil || string(data) != string(f.Data) {
			t.Errorf("%s: mounted file differs from rules/%s: %v", host, f.Name, err)
		}
	}
	serviceOf := func(hostport string) string {
		h, _, err := net.SplitHostPort(hostport)
		if err != nil {
			t.Fatalf("scrape target %q: %v", hostport, err)
		}
		if _, ok := s.Services[h]; !ok {
			t.Errorf("target %s is not a compose service", hostport)
		}
		return h
	}
	jobs := map[string]staticConfig{}
	for _, sc := range pc.ScrapeConfigs {
		if len(sc.StaticConfigs) != 1 || len(sc.StaticConfigs[0].Targets) != 1 {
			t.Fatalf("job %s: want one static target", sc.JobName)
		}
		jobs[serviceOf(sc.StaticConfigs[0].Targets[0])] = sc.StaticConfigs[0]
	}
	if _, ok := jobs["llmprobe"]; !ok {
		t.Error("prometheus.yml does not scrape llmprobe")
	}
	var cfg *config.Config
	cfg, err := config.Load(s.hostFile(t, "llmprobe", "/etc/llmprobe/llmprobe.yml"))
	if err != nil {
		t.Fatalf("compose llmprobe.yml: check-config: %v", err)
	}
	if len(cfg.Targets) != 1 {
		t.Fatalf("compose llmprobe.yml: %d targets, want 1", len(cfg.Targets))
	}
	u, err := url.Parse(cfg.Targets[0].BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	server := serviceOf(u.Host)
	if got := jobs[server].Labels["target"]; got != cfg.Targets[0].Name {
		t.Errorf("the scrape of %s sets target=%q, want %q (the llmprobe target name: the join label)", server, got, cfg.Targets[0].Name)
	}
	if len(pc.Alerting.Alertmanagers) != 1 || serviceOf(pc.Alerting.Alertmanagers[0].StaticConfigs[0].Targets[0]) != "alertmanager" {
		t.Error("prometheus.yml does not alert to the alertmanager service")
	}
	var am alertmanagerConfig
	if err := LoadStrict(s.hostFile(t, "alertmanager", "/etc/alertmanager/alertmanager.yml"), &am); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(am.Receivers, func(r struct {
		Name string `json:"name"`
	}) bool {
		return r.Name == am.Route.Receiver
	}) {
		t.Errorf("alertmanager.yml routes to %q, which is not a receiver", am.Route.Receiver)
	}
	checkComposeInhibitRules(t, s, am)
}

// checkComposeInhibitRules checks that the demo's Alertmanager loads the
// shipped deploy/alertmanager/alertmanager.yml and that its inhibit_rules
// are the list of deploy/alertmanager/inhibit-rules.yml (the demo shows one
// page per incident, as the docs say).
func checkComposeInhibitRules(t *testing.T, s composeStack, am alertmanagerConfig) {
	t.Helper()
	const shipped = "alertmanager"
	if host := s.hostFile(t, "alertmanager", "/etc/alertmanager/alertmanager.yml"); filepath.Clean(host) != filepath.Join(shipped, "alertmanager.yml") {
		t.Errorf("the demo's Alertmanager loads %s, want %s (the shipped configuration)", host, filepath.Join(shipped, "alertmanager.yml"))
	}
	var list struct {
		InhibitRules []inhibitRule `json:"inhibit_rules"`
	}
	if err := LoadStrict(filepath.Join(shipped, "inhibit-rules.yml"), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.InhibitRules) == 0 {
		t.Fatal("inhibit-rules.yml has no inhibition rules")
	}
	if len(am.InhibitRules) != len(list.InhibitRules) {
		t.Fatalf("the demo's alertmanager.yml has %d inhibition rules, inhibit-rules.yml %d", len(am.InhibitRules), len(list.InhibitRules))
	}
	for i, r := range list.InhibitRules {
		got := am.InhibitRules[i]
		if !slices.Equal(got.SourceMatchers, r.SourceMatchers) || !slices.Equal(got.TargetMatchers, r.TargetMatchers) || !slices.Equal(got.Equal, r.Equal) {
			t.Errorf("inhibition rule %d of the demo's alertmanager.yml is %+v, inhibit-rules.yml has %+v", i, got, r)
		}
	}
	if !slices.ContainsFunc(am.Route.Routes, func(r amRoute) bool { return slices.Contains(r.Matchers, "severity = none") }) {
		t.Error(`the demo's alertmanager.yml does not route severity="none" (the inhibitors) apart`)
	}
}

// TestComposeGrafana checks the provisioned data source (the Prometheus
// service, default) and that every dashboards/*.json is mounted, as it is,
// in the provider's folder.
func TestComposeGrafana(t *testing.T) {
	s := loadStack(t)
	var ds grafanaDatasources
	if err := LoadStrict(s.hostFile(t, "grafana", "/etc/grafana/provisioning/datasources/prometheus.yml"), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || !ds.Datasources[0].IsDefault {
		t.Fatalf("want one default prometheus data source, got %+v", ds.Datasources)
	}
	u, err := url.Parse(ds.Datasources[0].URL)
	if err != nil || u.Hostname() != "prometheus" {
		t.Errorf("data source URL %s is not the prometheus service: %v", ds.Datasources[0].URL, err)
	}
	var dp grafanaDashboards
	if err := LoadStrict(s.hostFile(t, "grafana", "/etc/grafana/provisioning/dashboards/llmprobe.yml"), &dp); err != nil {
		t.Fatal(err)
	}
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" {
		t.Fatalf("want one file provider, got %+v", dp.Providers)
	}
	dir := dp.Providers[0].Options.Path
	paths, err := filepath.Glob("../dashboards/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	var mounted int
	for target := range s.mounts["grafana"] {
		if path.Dir(target) == dir {
			mounted++
		}
	}
	if mounted != len(paths) {
		t.Errorf("grafana mounts %d files in %s, want the %d dashboards", mounted, dir, len(paths))
	}
	for _, p := range paths {
		host := s.hostFile(t, "grafana", path.Join(dir, filepath.Base(p)))
		if filepath.Clean(host) != filepath.Clean(p) {
			t.Errorf("%s is mounted from %s, want %s", filepath.Base(p), host, p)
		}
	}
	home := s.Services["grafana"].Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if _, ok := s.mounts["grafana"][home]; !ok {
		t.Errorf("the home dashboard %q is not mounted", home)
	}
}

func TestLoadStrictRejectsTypos(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, data, want string }{
		{"unknown key", "services: {a: {image: x, comand: [y]}}\n", `unknown field "services.a.comand"`},
		{"wrong case", "Services: {}\n", `unknown field "Services"`},
		{"duplicate key", "name: a\nname: b\n", `"name" already set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(p, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadCompose(p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadCompose() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// composeReadme is the demo's README, seen from this package.
var composeReadme = filepath.Join(composeDir, "README.md")

// readmeRuleList returns the rule files the compose README lists as loaded:
// the bullets "- `rules/NAME`: ..." after the line starting "Prometheus loads
// these rule files", up to the first line that is not one.
func readmeRuleList(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(composeReadme)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "\nPrometheus loads these rule files")
	if !ok {
		t.Fatalf("%s has no paragraph \"Prometheus loads these rule files\"", composeReadme)
	}
	lines := strings.Split(after, "\n")[1:]
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	var names []string
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, "- `rules/")
		if !ok {
			break
		}
		name, _, ok := strings.Cut(rest, "`")
		if !ok {
			t.Fatalf("%s: unterminated rule file name in %q", composeReadme, l)
		}
		names = append(names, name)
	}
	return names
}

// TestComposeReadmeRuleFiles checks that the compose README lists exactly
// the rule files compose.yaml mounts into Prometheus (and prometheus.yml
// loads), so that it cannot name fewer or more than the demo evaluates.
func TestComposeReadmeRuleFiles(t *testing.T) {
	s := loadStack(t)
	var mounted []string
	for target, m := range s.mounts["prometheus"] {
		if !m.Bind() {
			continue
		}
		if host := filepath.Clean(filepath.Join(composeDir, filepath.FromSlash(m.Source))); filepath.Dir(host) == filepath.Join("..", "rules") {
			mounted = append(mounted, filepath.Base(host))
			if !strings.HasPrefix(target, "/etc/prometheus/rules/") {
				t.Errorf("rule file %s is mounted at %s, outside /etc/prometheus/rules/", host, target)
			}
		}
	}
	var pc promConfig
	if err := LoadStrict(s.hostFile(t, "prometheus", "/etc/prometheus/prometheus.yml"), &pc); err != nil {
		t.Fatal(err)
	}
	var loaded []string
	for _, f := range pc.RuleFiles {
		loaded = append(loaded, path.Base(f))
	}
	listed := readmeRuleList(t)
	slices.Sort(mounted)
	slices.Sort(loaded)
	slices.Sort(listed)
	if len(mounted) == 0 {
		t.Fatal("compose.yaml mounts no rule file from rules/")
	}
	if !slices.Equal(listed, mounted) {
		t.Errorf("%s lists the rule files %v; compose.yaml mounts %v", composeReadme, listed, mounted)
	}
	if !slices.Equal(loaded, mounted) {
		t.Errorf("prometheus.yml loads %v; compose.yaml mounts %v", loaded, mounted)
	}
}

// TestComposeReadmeFaultDemo checks the README's fault demo against what it
// names: every --fault. flag is in docs/simulator.md's fault table (this
// package may not import the simulator), and every alert it names is an
// alert of the rule files the demo loads.
func TestComposeReadmeFaultDemo(t *testing.T) {
	data, err := os.ReadFile(composeReadme)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	sim, err := os.ReadFile(filepath.Join("..", "docs", "simulator.md"))
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile("--fault\\.([a-z0-9-]+)=").FindAllStringSubmatch(readme, -1)
	if len(flags) == 0 {
		t.Fatalf("%s injects no fault (--fault.NAME=P)", composeReadme)
	}
	for _, f := range flags {
		if !strings.Contains(string(sim), "`"+f[1]+"`") {
			t.Errorf("%s uses --fault.%s, which docs/simulator.md does not list", composeReadme, f[1])
		}
	}
	var alerts strings.Builder
	for _, f := range ruleFiles(t) {
		alerts.Write(f.Data)
	}
	names := regexp.MustCompile("`(LLMProbe[A-Za-z]+)`").FindAllStringSubmatch(readme, -1)
	if len(names) == 0 {
		t.Fatalf("%s names no alert", composeReadme)
	}
	for _, n := range names {
		if !strings.Contains(alerts.String(), "alert: "+n[1]+"\n") {
			t.Errorf("%s names %s, which is no alert of rules/*.yml", composeReadme, n[1])
		}
	}
}

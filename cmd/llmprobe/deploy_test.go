package main

import (
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmprobe/llmprobe/deploy"
	"github.com/llmprobe/llmprobe/prober/config"
)

// deployDir is the repository's deploy/, seen from this package.
const deployDir = "../../deploy"

// invocation is a parsed llmprobe command line: the command and the value
// of every flag, set or defaulted (repeatable flags hold every value).
type invocation struct {
	cmd   string
	flags map[string][]string
}

func (in invocation) flag(name string) string {
	vs := in.flags[name]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// parseInvocation parses args (without the program name) with llmprobe's own
// flag parser, as `llmprobe args...` would, and fails the test where the
// binary would refuse them.
func parseInvocation(t *testing.T, where string, args []string) invocation {
	t.Helper()
	app, lc, actions := newApp(io.Discard, io.Discard)
	exited := false
	app.Terminate(func(int) { exited = true })
	cmd, err := app.Parse(args)
	if err != nil || exited {
		t.Fatalf("%s: llmprobe %s: does not parse: %v", where, strings.Join(args, " "), err)
	}
	if err := lc.Validate(); err != nil {
		t.Fatalf("%s: llmprobe %s: %v", where, strings.Join(args, " "), err)
	}
	if _, ok := actions[cmd]; !ok {
		t.Fatalf("%s: llmprobe %s: no action for command %q", where, strings.Join(args, " "), cmd)
	}
	in := invocation{cmd: cmd, flags: map[string][]string{}}
	m := app.Model()
	defaults := func(fs []*kingpin.FlagModel) {
		for _, f := range fs {
			in.flags[f.Name] = f.Default
		}
	}
	defaults(m.Flags)
	for _, c := range m.Commands {
		if c.FullCommand == cmd {
			defaults(c.Flags)
		}
	}
	pc, err := app.ParseContext(args)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	set := map[string]bool{}
	for _, e := range pc.Elements {
		if f, ok := e.Clause.(*kingpin.FlagClause); ok && e.Value != nil {
			name := f.Model().Name
			if !set[name] {
				in.flags[name] = nil
				set[name] = true
			}
			in.flags[name] = append(in.flags[name], *e.Value)
		}
	}
	return in
}

// listenPort returns the one port of the command's --web.listen-address.
func listenPort(t *testing.T, where string, in invocation) (host string, port int) {
	t.Helper()
	addrs := in.flags["web.listen-address"]
	if len(addrs) != 1 {
		t.Fatalf("%s: want one --web.listen-address, got %q", where, addrs)
	}
	h, p, err := net.SplitHostPort(addrs[0])
	if err != nil {
		t.Fatalf("%s: --web.listen-address %q: %v", where, addrs[0], err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s: --web.listen-address %q: %v", where, addrs[0], err)
	}
	return h, n
}

func TestDefaultListenPortIs9741(t *testing.T) {
	in := parseInvocation(t, "default", []string{"serve"})
	if h, p := listenPort(t, "serve", in); h != "" || p != 9741 {
		t.Fatalf("serve listens on %s:%d by default, want :9741 (the port every deployment file uses)", h, p)
	}
}

func containerPort(t *testing.T, where string, c corev1.Container, name string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("%s: no container port named %s", where, name)
	return 0
}

// TestManifestCommandsParse checks the command line of every llmprobe
// container of every kustomization against the binary: it parses, serve
// reads a config file that a ConfigMap volume provides, listens on the
// container's http port and shuts down within the grace period; simulate
// listens on every interface on the http port.
func TestManifestCommandsParse(t *testing.T) {
	root := filepath.Join(deployDir, "kubernetes")
	dirs, err := deploy.Kustomizations(root)
	if err != nil {
		t.Fatal(err)
	}
	serves := 0
	for _, d := range dirs {
		objs, err := deploy.Build(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		configMaps := map[string]*corev1.ConfigMap{}
		for _, cm := range deploy.Of[corev1.ConfigMap](objs) {
			configMaps[cm.Name] = cm
		}
		for _, dep := range deploy.Of[appsv1.Deployment](objs) {
			pod := dep.Spec.Template.Spec
			for _, c := range pod.Containers {
				where := d + ": " + dep.Name + "/" + c.Name
				in := parseInvocation(t, where, append(slices.Clone(c.Command), c.Args...))
				host, port := listenPort(t, where, in)
				if want := containerPort(t, where, c, "http"); port != want {
					t.Errorf("%s: listens on %d, the container port http is %d", where, port, want)
				}
				switch in.cmd {
				case "serve":
					serves++
					file := in.flag("config.file")
					if !path.IsAbs(file) {
						t.Errorf("%s: --config.file %q is not absolute", where, file)
					}
					var found bool
					for _, m := range c.VolumeMounts {
						if path.Dir(file) != path.Clean(m.MountPath) {
							continue
						}
						for _, v := range pod.Volumes {
							if v.Name == m.Name && v.ConfigMap != nil {
								cm := configMaps[v.ConfigMap.Name]
								_, found = cm.Data[path.Base(file)]
							}
						}
					}
					if !found {
						t.Errorf("%s: --config.file %s is not a key of a mounted ConfigMap", where, file)
					}
					grace := 30 * time.Second // Kubernetes' default
					if s := pod.TerminationGracePeriodSeconds; s != nil {
						grace = time.Duration(*s) * time.Second
					}
					shutdown, err := time.ParseDuration(in.flag("shutdown-timeout"))
					if err != nil || shutdown >= grace {
						t.Errorf("%s: --shutdown-timeout %s must be shorter than the grace period %s (%v)", where, in.flag("shutdown-timeout"), grace, err)
					}
				case "simulate":
					if host != "" && host != "0.0.0.0" {
						t.Errorf("%s: the simulator listens on %s only, not reachable from other pods", where, host)
					}
				default:
					t.Errorf("%s: runs %q, want serve or simulate", where, in.cmd)
				}
			}
		}
	}
	if serves == 0 {
		t.Fatal("no serve container checked")
	}
}

// TestComposeCommandsParse checks the llmprobe and simulator services of the
// compose demo against the binary and against the ports Prometheus scrapes.
func TestComposeCommandsParse(t *testing.T) {
	dir := filepath.Join(deployDir, "compose")
	c, err := deploy.LoadCompose(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &prom); err != nil {
		t.Fatal(err)
	}
	scraped := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			for _, tg := range s.Targets {
				scraped[tg] = true
			}
		}
	}
	for _, name := range []string{"llmprobe", "simulator"} {
		svc := c.Services[name]
		in := parseInvocation(t, "compose "+name, svc.Command)
		_, port := listenPort(t, "compose "+name, in)
		if !scraped[net.JoinHostPort(name, strconv.Itoa(port))] {
			t.Errorf("compose %s listens on %d; Prometheus scrapes %v", name, port, scraped)
		}
		if !slices.ContainsFunc(svc.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+strconv.Itoa(port)) }) {
			t.Errorf("compose %s listens on %d, which it does not publish (%v)", name, port, svc.Ports)
		}
		if in.cmd != map[string]string{"llmprobe": "serve", "simulator": "simulate"}[name] {
			t.Errorf("compose %s runs %s", name, in.cmd)
		}
		// The image's HEALTHCHECK (no flags) asks the address in the
		// service's environment, or serve's default: the port it listens on.
		hc := svc.Environment[webListenEnv]
		if hc == "" {
			hc = defaultHealthListen
		}
		if urls, err := healthURLs(hc); err != nil || !strings.Contains(urls[0], ":"+strconv.Itoa(port)+"/") {
			t.Errorf("compose %s listens on %d, its health check asks %v (%v): set %s", name, port, urls, err, webListenEnv)
		}
		if in.cmd == "serve" {
			ms, err := svc.Mounts()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(ms, func(m deploy.Mount) bool { return m.Target == in.flag("config.file") && m.Bind() }) {
				t.Errorf("compose %s reads %s, which it does not mount", name, in.flag("config.file"))
			}
		}
	}
	// llmprobe reaches the simulator where it listens.
	var cfgURL string
	for _, m := range mustMounts(t, c.Services["llmprobe"]) {
		if m.Target == parseInvocation(t, "compose llmprobe", c.Services["llmprobe"].Command).flag("config.file") {
			cfg, err := config.Load(filepath.Join(dir, m.Source))
			if err != nil {
				t.Fatal(err)
			}
			cfgURL = cfg.Targets[0].BaseURL
		}
	}
	u, err := url.Parse(cfgURL)
	if err != nil {
		t.Fatal(err)
	}
	_, simPort := listenPort(t, "compose simulator", parseInvocation(t, "compose simulator", c.Services["simulator"].Command))
	if u.Host != net.JoinHostPort("simulator", strconv.Itoa(simPort)) {
		t.Errorf("compose llmprobe probes %s; the simulator listens on simulator:%d", cfgURL, simPort)
	}
}

func mustMounts(t *testing.T, s deploy.ComposeService) []deploy.Mount {
	t.Helper()
	ms, err := s.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestSystemdUnitCommandsParse checks the unit's ExecStart against the
// binary and that reload is SIGHUP, which serve handles.
func TestSystemdUnitCommandsParse(t *testing.T) {
	u, err := deploy.LoadUnit(filepath.Join(deployDir, "systemd", "llmprobe.service"))
	if err != nil {
		t.Fatal(err)
	}
	args, err := deploy.SplitCommand(u.Get("Service", "ExecStart"))
	if err != nil {
		t.Fatal(err)
	}
	if len(args) < 2 || path.Base(args[0]) != "llmprobe" || !path.IsAbs(args[0]) {
		t.Fatalf("ExecStart=%q does not run llmprobe by its absolute path", args)
	}
	in := parseInvocation(t, "systemd ExecStart", args[1:])
	if in.cmd != "serve" || !strings.HasPrefix(in.flag("config.file"), "/etc/llmprobe/") {
		t.Errorf("ExecStart runs %s with --config.file %q, want serve with a file in /etc/llmprobe", in.cmd, in.flag("config.file"))
	}
	if _, port := listenPort(t, "systemd", in); port != 9741 {
		t.Errorf("the unit listens on %d, want 9741", port)
	}
	// ProtectSystem=strict makes everything but the StateDirectory
	// read-only: --sweeps.dir must be below it (/var/lib/<name>).
	state := u.Get("Service", "StateDirectory")
	if dir := in.flag("sweeps.dir"); state == "" || !strings.HasPrefix(dir, "/var/lib/"+state+"/") {
		t.Errorf("the unit's --sweeps.dir %q is not below its StateDirectory=%q (/var/lib/%s/): sweeps fail with a read-only file system", dir, state, state)
	}
	if got := u.Get("Service", "ExecReload"); got != "/bin/kill -HUP $MAINPID" {
		t.Errorf("ExecReload=%q, want SIGHUP to the main process", got)
	}
}

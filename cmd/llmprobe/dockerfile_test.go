package main

import (
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/version"

	"github.com/llmprobe/llmprobe/deploy"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// dockerfile is the repository's Dockerfile, seen from this package.
const dockerfile = "../../Dockerfile"

// stage is one build stage of a Dockerfile.
type stage struct {
	from string // the FROM line's arguments
	ins  []deploy.Instruction
}

// dockerfileShape is the Dockerfile as the builders see it: the global
// arguments (ARG before the first FROM) with their defaults, then the stages.
type dockerfileShape struct {
	globals map[string]*string // nil: declared without a default
	stages  []stage
}

func (s stage) all(cmd string) []deploy.Instruction {
	var out []deploy.Instruction
	for _, in := range s.ins {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func (s stage) last(t *testing.T, cmd string) deploy.Instruction {
	t.Helper()
	all := s.all(cmd)
	if len(all) == 0 {
		t.Fatalf("the final stage has no %s", cmd)
	}
	return all[len(all)-1]
}

func loadStages(t *testing.T) []stage {
	t.Helper()
	return loadDockerfile(t).stages
}

func loadDockerfile(t *testing.T) dockerfileShape {
	t.Helper()
	ins, err := deploy.LoadDockerfile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	globals := map[string]*string{}
	for _, in := range ins {
		if in.Cmd == "FROM" {
			stages = append(stages, stage{from: in.Args})
			continue
		}
		if len(stages) == 0 {
			if in.Cmd != "ARG" {
				t.Fatalf("line %d: %s before FROM", in.Line, in.Cmd)
			}
			name, def, ok := strings.Cut(in.Args, "=")
			if ok {
				globals[name] = &def
			} else {
				globals[name] = nil
			}
			continue
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, then distroless)", len(stages))
	}
	return dockerfileShape{globals: globals, stages: stages}
}

// expandArgs expands $NAME, ${NAME} and ${NAME:-word} in s as a builder
// does in a FROM line, from vars (an unset name expands to ""; word is
// expanded too).
func expandArgs(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '{' {
			depth, end := 0, -1
			for j := i + 1; j < len(s) && end < 0; j++ {
				switch s[j] {
				case '{':
					depth++
				case '}':
					if depth--; depth == 0 {
						end = j
					}
				}
			}
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			name, word, hasDefault := strings.Cut(s[i+2:end], ":-")
			if v := vars[name]; v != "" || !hasDefault {
				b.WriteString(v)
			} else {
				b.WriteString(expandArgs(word, vars))
			}
			i = end
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || 'A' <= s[j] && s[j] <= 'Z' || 'a' <= s[j] && s[j] <= 'z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		b.WriteString(vars[s[i+1:j]])
		i = j - 1
	}
	return b.String()
}

// fromPlatform returns the --platform of a FROM line as a builder expands
// it with the global arguments' defaults and the builder's automatic ones.
// A global ARG declared without a default hides an automatic value, as
// BuildKit's front end does.
func (d dockerfileShape) fromPlatform(from string, automatic map[string]string) (string, bool) {
	p, ok := strings.CutPrefix(from, "--platform=")
	if !ok {
		return "", false
	}
	p, _, _ = strings.Cut(p, " ")
	vars := map[string]string{}
	for k, v := range automatic {
		vars[k] = v
	}
	for k, v := range d.globals {
		if v == nil {
			vars[k] = ""
		} else {
			vars[k] = expandArgs(*v, vars)
		}
	}
	return expandArgs(p, vars), true
}

// xFlag matches the -X name=value settings of -ldflags.
var xFlag = regexp.MustCompile(`-X\s+([\w./-]+)\.(\w+)=`)

// TestDockerfile checks the Dockerfile statically (deploy/test-image.sh
// builds and runs it in a real engine): a Go build stage on the go.mod
// version building a static, trimmed binary with its version injected; a
// distroless nonroot final stage with OCI labels, a numeric non-root user,
// EXPOSE of serve's port, the binary as ENTRYPOINT and a HEALTHCHECK; no
// configuration file baked in. TestDockerfileBuilders checks what the
// builders need.
func TestDockerfile(t *testing.T) {
	stages := loadStages(t)
	build, final := stages[0], stages[1]
	var goBuild string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.Args, "go build") {
			goBuild = in.Args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-ldflags", "-o /out/llmprobe", "./cmd/llmprobe"} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("go build %q lacks %q", goBuild, want)
		}
	}
	// The version variables: the ones the Makefile injects, all existing.
	vars := map[string]*string{
		"Version": &version.Version, "Revision": &version.Revision, "Branch": &version.Branch,
		"BuildUser": &version.BuildUser, "BuildDate": &version.BuildDate,
	}
	injected := func(s string) []string {
		var names []string
		for _, m := range xFlag.FindAllStringSubmatch(s, -1) {
			if m[1] != "github.com/prometheus/common/version" || vars[m[2]] == nil {
				t.Errorf("-X %s.%s sets no variable of prometheus/common/version", m[1], m[2])
			}
			names = append(names, m[2])
		}
		slices.Sort(names)
		return names
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := injected(goBuild), injected(string(makefile)); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the Dockerfile injects %v, the Makefile %v: want the same version variables", got, want)
	}

	if copies := final.all("COPY"); len(copies) != 2 || copies[0].Args != "--from=build /out/llmprobe /bin/llmprobe" ||
		copies[1].Args != "--from=build --chown=65532:65532 /out/state "+imageStateDir {
		t.Errorf("the final stage copies %v, want only the binary and the empty state directory (no configuration: the default runs the built-in simulator)", copies)
	}
	// Scheduled sweeps write under the state directory: a volume (writable
	// on a read-only root), owned by the image's user, named by
	// LLMPROBE_SWEEPS_DIR.
	if v := final.last(t, "VOLUME").Args; v != imageStateDir && v != `["`+imageStateDir+`"]` {
		t.Errorf("VOLUME %s, want %s (sweeps need a writable directory on a read-only root)", v, imageStateDir)
	}
	if env := final.last(t, "ENV").Args; env != sweepsDirEnv+"="+imageStateDir+"/sweeps" {
		t.Errorf("ENV %s, want %s=%s/sweeps", env, sweepsDirEnv, imageStateDir)
	}
	user := final.last(t, "USER").Args
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric non-root user (Kubernetes' runAsNonRoot cannot check a name)", user)
	}
	_, port := listenPort(t, "serve", parseInvocation(t, "default", []string{"serve"}))
	if got := final.last(t, "EXPOSE").Args; got != strconv.Itoa(port) && got != strconv.Itoa(port)+"/tcp" {
		t.Errorf("EXPOSE %s, want serve's port %d", got, port)
	}
	if ep, err := final.last(t, "ENTRYPOINT").Exec(); err != nil || !slices.Equal(ep, []string{"/bin/llmprobe"}) {
		t.Errorf("ENTRYPOINT %q (%v), want [\"/bin/llmprobe\"]", ep, err)
	}
	checkHealthcheck(t, final)
	var labels string
	for _, in := range final.all("LABEL") {
		labels += " " + in.Args
	}
	for _, l := range []string{"title", "description", "source", "version", "revision"} {
		if !strings.Contains(labels, "org.opencontainers.image."+l+"=") {
			t.Errorf("no OCI label org.opencontainers.image.%s", l)
		}
	}
}

// TestDockerfileDefaultCommand checks the image's default command with the
// binary's own flag parser and runs it: with no arguments, and in a working
// directory without llmprobe.yml (as in the image), it probes the built-in
// simulator and says so. `docker run IMAGE --target URL` replaces the
// command and must parse as serve too.
func TestDockerfileDefaultCommand(t *testing.T) {
	stages := loadStages(t)
	cmd, err := stages[1].last(t, "CMD").Exec()
	if err != nil {
		t.Fatal(err)
	}
	in := parseInvocation(t, "Dockerfile CMD", cmd)
	if in.cmd != "serve" || len(cmd) != 1 {
		t.Fatalf("CMD %q, want [\"serve\"] alone: the embedded default, no config file", cmd)
	}
	if got := parseInvocation(t, "docker run IMAGE --target", []string{"--target", "http://vllm:8000"}); got.cmd != "serve" || got.flag("target") != "http://vllm:8000" {
		t.Errorf("--target alone parses as %q with target %q, want serve", got.cmd, got.flag("target"))
	}

	t.Chdir(t.TempDir()) // no ./llmprobe.yml, as in the image's WORKDIR
	base, logs, stop := startServe(t, cmd[1:]...)
	testutil.Eventually(t, "the default command gets ready", func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !strings.Contains(logs.String(), "probing the BUILT-IN SIMULATOR") {
		t.Errorf("the default command does not log that it probes the simulator:\n%s", logs)
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d; log:\n%s", code, logs)
	}
}

// TestDockerfileVersionArgs: every version variable the Dockerfile's go
// build stamps comes from a build argument of its stage, and `make docker`
// passes each of those arguments from the Makefile's own values, so the
// image reports the revision `make build` does (issue 21 Deliver 6: the
// image said revision=unknown; its build context has no .git to read it
// from).
func TestDockerfileVersionArgs(t *testing.T) {
	stages := loadStages(t)
	build, final := stages[0], stages[1]
	declared := map[string]bool{}
	for _, in := range build.all("ARG") {
		name, _, _ := strings.Cut(in.Args, "=")
		declared[name] = true
	}
	var goBuild string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.Args, "go build") {
			goBuild = in.Args
		}
	}
	stamped := regexp.MustCompile(`-X\s+github\.com/prometheus/common/version\.\w+=\$\{(\w+)\}`).FindAllStringSubmatch(goBuild, -1)
	if len(stamped) == 0 {
		t.Fatalf("go build %q stamps no version variable from a build argument", goBuild)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	target := regexp.MustCompile(`(?ms)^docker:\n((?:\t[^\n]*\n)+)`).FindSubmatch(makefile)
	if target == nil {
		t.Fatal("the Makefile has no docker target")
	}
	recipe := string(target[1])
	for _, m := range stamped {
		if !declared[m[1]] {
			t.Errorf("go build uses ${%s}, which the build stage does not declare (ARG)", m[1])
		}
		if !strings.Contains(recipe, "--build-arg "+m[1]+"=$("+m[1]+")") {
			t.Errorf("make docker does not pass --build-arg %s=$(%s):\n%s", m[1], m[1], recipe)
		}
	}
	if !strings.Contains(goBuild, "Revision=${REVISION}") {
		t.Errorf("go build does not stamp the revision from REVISION: %q", goBuild)
	}
	var labels string
	for _, in := range final.all("LABEL") {
		labels += " " + in.Args
	}
	if !strings.Contains(labels, `org.opencontainers.image.revision="${REVISION}"`) {
		t.Errorf("the revision label is not the REVISION argument: %s", labels)
	}
}

// imageStateDir is the image's writable volume: the sweeps directory is
// below it.
const imageStateDir = "/var/lib/llmprobe"

// checkHealthcheck: the final stage has one HEALTHCHECK, in exec form (no
// shell in distroless), running `llmprobe healthcheck` as this binary parses
// it, against serve's default port on loopback, with an interval and a
// timeout longer than the command's own.
func checkHealthcheck(t *testing.T, final stage) {
	t.Helper()
	hcs := final.all("HEALTHCHECK")
	if len(hcs) != 1 {
		t.Errorf("the final stage has %d HEALTHCHECK instructions, want 1 (distroless has no curl: `llmprobe healthcheck`)", len(hcs))
		return
	}
	hc := hcs[0]
	opts, cmdArgs, ok := strings.Cut(hc.Args, "CMD ")
	if !ok {
		t.Errorf("line %d: HEALTHCHECK %s: want HEALTHCHECK [options] CMD [...]", hc.Line, hc.Args)
		return
	}
	args, err := deploy.Instruction{Cmd: "CMD", Args: strings.TrimSpace(cmdArgs), Line: hc.Line}.Exec()
	if err != nil {
		t.Errorf("HEALTHCHECK: %v (distroless has no shell)", err)
		return
	}
	if len(args) < 2 || args[0] != "/bin/llmprobe" {
		t.Errorf("HEALTHCHECK runs %q, want /bin/llmprobe healthcheck", args)
		return
	}
	in := parseInvocation(t, "HEALTHCHECK", args[1:])
	if in.cmd != "healthcheck" {
		t.Errorf("HEALTHCHECK runs llmprobe %s, want healthcheck", in.cmd)
	}
	_, port := listenPort(t, "serve", parseInvocation(t, "default", []string{"serve"}))
	if in.flag("url") != "" {
		t.Errorf("HEALTHCHECK asks --url %q: want the listen address (LLMPROBE_WEB_LISTEN_ADDRESS moves serve and the check together)", in.flag("url"))
	}
	urls, err := healthURLs(in.flag("web.listen-address"))
	if err != nil || len(urls) == 0 {
		t.Fatalf("HEALTHCHECK --web.listen-address %q: %v", in.flag("web.listen-address"), err)
	}
	u, err := url.Parse(urls[0])
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() != strconv.Itoa(port) || u.Path != "/-/healthy" {
		t.Errorf("HEALTHCHECK asks %q first, want serve's /-/healthy at 127.0.0.1:%d", urls[0], port)
	}
	option := map[string]time.Duration{}
	for _, o := range strings.Fields(opts) {
		name, v, _ := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		if d, err := time.ParseDuration(v); err == nil {
			option[name] = d
		}
	}
	own, err := time.ParseDuration(in.flag("timeout"))
	if err != nil {
		t.Fatalf("healthcheck --timeout %q: %v", in.flag("timeout"), err)
	}
	if option["interval"] <= 0 || option["timeout"] <= own {
		t.Errorf("HEALTHCHECK %s: want --interval and a --timeout above the command's own %s (so the command says why it failed)", opts, own)
	}
}

// TestDockerfileBuilders checks what the two builders need (issue 27: the
// classic builder failed at FROM --platform=$BUILDPLATFORM, BuildKit pulled
// the syntax frontend from a registry): no `# syntax=` directive; the build
// stage's --platform expands to a platform with no automatic arguments (the
// classic builder) and to BuildKit's BUILDPLATFORM when it sets one (no
// global ARG hides it); both base images are global arguments (so a build can
// name local stand-ins, as deploy/test-image.sh does) whose defaults are
// pinned by digest: golang at go.mod's version, distroless static nonroot.
func TestDockerfileBuilders(t *testing.T) {
	raw, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?mi)^#\s*syntax\s*=.*$`).Find(raw); m != nil {
		t.Errorf("%q: BuildKit pulls that frontend from a registry before building; the built-in one reads this file", m)
	}
	d := loadDockerfile(t)
	build, final := d.stages[0], d.stages[1]

	for _, b := range []struct {
		name      string
		automatic map[string]string
		want      string
	}{
		{"the classic builder (DOCKER_BUILDKIT=0)", nil, ""},
		{"BuildKit on an arm64 machine", map[string]string{"BUILDPLATFORM": "linux/arm64", "TARGETPLATFORM": "linux/amd64"}, "linux/arm64"},
		{"BuildKit on an amd64 machine", map[string]string{"BUILDPLATFORM": "linux/amd64", "TARGETPLATFORM": "linux/arm64"}, "linux/amd64"},
	} {
		p, ok := d.fromPlatform(build.from, b.automatic)
		if !ok {
			t.Errorf("build stage FROM %q: want --platform (the Go build cross-compiles for TARGETOS/TARGETARCH)", build.from)
			break
		}
		if !regexp.MustCompile(`^[a-z0-9]+/[a-z0-9_]+(/v\d+)?$`).MatchString(p) {
			t.Errorf("%s: the build stage's --platform expands to %q, not a platform (FROM %s)", b.name, p, build.from)
		} else if b.want != "" && p != b.want {
			t.Errorf("%s: the build stage's --platform expands to %q, want BUILDPLATFORM %s (FROM %s)", b.name, p, b.want, build.from)
		}
	}

	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+(?:\.\d+)?)\s*$`).FindSubmatch(goMod)
	if goVersion == nil {
		t.Fatal("go.mod has no go line")
	}
	digest := `@sha256:[0-9a-f]{64}$`
	for _, img := range []struct {
		stage   stage
		pattern string
		want    string
	}{
		{build, `^golang:` + regexp.QuoteMeta(string(goVersion[1])) + digest, "golang:" + string(goVersion[1]) + "@sha256:<digest> (go.mod's go line; the image sets GOTOOLCHAIN=local)"},
		{final, `^gcr\.io/distroless/static-debian\d+:nonroot` + digest, "gcr.io/distroless/static-debianN:nonroot@sha256:<digest>"},
	} {
		fields := strings.Fields(img.stage.from)
		ref := ""
		for _, f := range fields {
			if !strings.HasPrefix(f, "--") {
				ref = f
				break
			}
		}
		name, ok := strings.CutPrefix(ref, "${")
		name, ok2 := strings.CutSuffix(name, "}")
		if !ok || !ok2 || strings.ContainsAny(name, ":-$") {
			t.Errorf("FROM %s: want the image as a global argument, FROM ${NAME} (overridable with --build-arg)", img.stage.from)
			continue
		}
		def := d.globals[name]
		if def == nil {
			t.Errorf("FROM %s: no global ARG %s=<pinned image>", img.stage.from, name)
			continue
		}
		if !regexp.MustCompile(img.pattern).MatchString(*def) {
			t.Errorf("ARG %s=%s, want %s", name, *def, img.want)
		}
	}
}

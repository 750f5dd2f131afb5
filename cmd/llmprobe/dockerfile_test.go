package main

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	ins, err := deploy.LoadDockerfile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	for _, in := range ins {
		if in.Cmd == "FROM" {
			stages = append(stages, stage{from: in.Args})
			continue
		}
		if len(stages) == 0 {
			if in.Cmd != "ARG" {
				t.Fatalf("line %d: %s before FROM", in.Line, in.Cmd)
			}
			continue
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, then distroless)", len(stages))
	}
	return stages
}

// xFlag matches the -X name=value settings of -ldflags.
var xFlag = regexp.MustCompile(`-X\s+([\w./-]+)\.(\w+)=`)

// TestDockerfile checks the Dockerfile statically (no Docker engine here):
// a Go build stage on the go.mod version building a static, trimmed binary
// with its version injected; a distroless nonroot final stage with OCI
// labels, a numeric non-root user, EXPOSE of serve's port, the binary as
// ENTRYPOINT and no HEALTHCHECK; no configuration file baked in.
func TestDockerfile(t *testing.T) {
	stages := loadStages(t)
	build, final := stages[0], stages[1]

	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	if !regexp.MustCompile(`^--platform=\$BUILDPLATFORM golang:` + regexp.QuoteMeta(string(goVersion[1])) + `\S* AS build$`).MatchString(build.from) {
		t.Errorf("build stage FROM %q, want --platform=$BUILDPLATFORM golang:%s AS build", build.from, goVersion[1])
	}
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

	if !regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?:nonroot$`).MatchString(final.from) {
		t.Errorf("final stage FROM %q, want gcr.io/distroless/static-debianN:nonroot", final.from)
	}
	if copies := final.all("COPY"); len(copies) != 1 || copies[0].Args != "--from=build /out/llmprobe /bin/llmprobe" {
		t.Errorf("the final stage copies %v, want only the binary (no configuration: the default runs the built-in simulator)", copies)
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
	if hc := final.all("HEALTHCHECK"); len(hc) > 0 {
		t.Errorf("HEALTHCHECK at line %d: leave health to the orchestrator (/-/healthy, /-/ready)", hc[0].Line)
	}
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

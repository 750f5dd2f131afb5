package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// imageScript is the script that builds and runs the image in a real engine.
const imageScript = "test-image.sh"

// TestImageScriptMatchesDockerfile checks deploy/test-image.sh against what
// it tests, without an engine (the script itself needs one, and root): it
// parses as bash; the pins it reads from the Dockerfile (`sed -n
// "s/^ARG NAME=//p"`) are there and the build arguments it overrides are the
// ones the stages' FROM lines use; the HEALTHCHECK it expects in the built
// image is the Dockerfile's; `make image-test` runs it.
func TestImageScriptMatchesDockerfile(t *testing.T) {
	script, err := readFile(imageScript)
	if err != nil {
		t.Fatal(err)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		if out, err := exec.Command(bash, "-n", imageScript).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", imageScript, err, out)
		}
	}
	if fi, err := os.Stat(imageScript); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable", imageScript)
	}

	ins, err := LoadDockerfile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	var healthcheck string
	for _, in := range ins {
		switch in.Cmd {
		case "FROM":
			froms = append(froms, in.Args)
		case "HEALTHCHECK":
			_, cmd, _ := strings.Cut(in.Args, "CMD ")
			args, err := Instruction{Cmd: "CMD", Args: strings.TrimSpace(cmd), Line: in.Line}.Exec()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(append([]string{"CMD"}, args...))
			healthcheck = string(b)
		}
	}
	raw, err := readFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range regexp.MustCompile(`pin ([A-Z_]+)\)`).FindAllStringSubmatch(string(script), -1) {
		if !regexp.MustCompile(`(?m)^ARG ` + arg[1] + `=\S+$`).Match(raw) {
			t.Errorf("the script reads the pin ARG %s= from the Dockerfile, which has none", arg[1])
		}
	}
	for _, arg := range regexp.MustCompile(`--build-arg "([A-Z_]+)=\$LOCAL_`).FindAllStringSubmatch(string(script), -1) {
		used := false
		for _, f := range froms {
			used = used || strings.Contains(f, "${"+arg[1]+"}")
		}
		if !used {
			t.Errorf("the script names its stand-in with --build-arg %s, which no FROM of the Dockerfile uses: %q", arg[1], froms)
		}
	}
	if healthcheck == "" {
		t.Fatal("the Dockerfile has no HEALTHCHECK")
	}
	if !strings.Contains(string(script), `"$hc" = '`+healthcheck+`'`) {
		t.Errorf("the script does not expect the Dockerfile's HEALTHCHECK %s in the built image", healthcheck)
	}

	makefile, err := readFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^image-test:\n\t.*deploy/` + regexp.QuoteMeta(imageScript)).Match(makefile) {
		t.Error("make image-test does not run deploy/" + imageScript)
	}
}

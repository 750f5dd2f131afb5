package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Instruction is one instruction of a Dockerfile.
type Instruction struct {
	// Cmd is the instruction, upper case (FROM, RUN, CMD, ...).
	Cmd string
	// Args is the rest of the line, continuations joined with a space.
	Args string
	// Line is the line the instruction starts on.
	Line int
}

// Exec returns the arguments of an exec-form instruction (CMD ["a", "b"]);
// it fails on the shell form.
func (in Instruction) Exec() ([]string, error) {
	var args []string
	if !strings.HasPrefix(in.Args, "[") {
		return nil, fmt.Errorf("line %d: %s is in shell form, want exec form [\"...\"]", in.Line, in.Cmd)
	}
	if err := json.Unmarshal([]byte(in.Args), &args); err != nil {
		return nil, fmt.Errorf("line %d: %s: %w", in.Line, in.Cmd, err)
	}
	return args, nil
}

// LoadDockerfile parses a Dockerfile into its instructions: comments and
// blank lines are dropped, backslash continuations joined (the default
// escape character; parser directives are comments here). Heredocs are not
// supported.
func LoadDockerfile(path string) ([]Instruction, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var ins []Instruction
	sc := bufio.NewScanner(bytes.NewReader(data))
	n, start := 0, 0
	var cur strings.Builder
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		l, more := strings.CutSuffix(line, `\`)
		cur.WriteString(strings.TrimSpace(l))
		if more {
			cur.WriteString(" ")
			continue
		}
		text := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		if strings.Contains(args, "<<") && strings.ToUpper(cmd) == "RUN" {
			return nil, fmt.Errorf("%s:%d: heredocs are not supported", path, start)
		}
		ins = append(ins, Instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args), Line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("%s: file ends in a line continuation", path)
	}
	return ins, nil
}

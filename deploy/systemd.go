package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// Unit is a parsed systemd unit file: for each section, each key's values
// in file order (a key may repeat, as SystemCallFilter= does).
type Unit map[string]map[string][]string

// Get returns the last value of key in section ("" when unset), the one
// systemd uses for keys that do not accumulate.
func (u Unit) Get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// LoadUnit parses a systemd unit file: [Section] headers, Key=Value lines,
// comments (# and ;) and backslash line continuations.
func LoadUnit(path string) (Unit, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	u := Unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	var cont strings.Builder
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if cont.Len() == 0 && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if l, ok := strings.CutSuffix(line, `\`); ok {
			cont.WriteString(strings.TrimSpace(l) + " ")
			continue
		}
		if cont.Len() > 0 {
			line = cont.String() + line
			cont.Reset()
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: bad section header %q", path, n, line)
			}
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("%s:%d: want Key=Value in a section, got %q", path, n, line)
		}
		key = strings.TrimSpace(key)
		u[section][key] = append(u[section][key], strings.TrimSpace(value))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cont.Len() > 0 {
		return nil, fmt.Errorf("%s: file ends in a line continuation", path)
	}
	return u, nil
}

// SplitCommand splits a command line as systemd's Exec*= and a shell split
// simple ones: on spaces, with "double" and 'single' quoted words. It does
// not expand variables or specifiers.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

package archtest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// sweepSetting returns the settings-table row of a target's sweep key
// ("target.sweeps[].duration", "target.sweeps[].concurrency[]"), if the
// table has a row with that spec key.
func sweepSetting(row string) (sweep.Setting, bool) {
	key, ok := strings.CutPrefix(row, "target.sweeps[].")
	if !ok {
		return sweep.Setting{}, false
	}
	key = strings.TrimSuffix(key, "[]")
	for _, s := range sweep.Settings() {
		if s.Key == key && s.Surfaces&sweep.SurfaceSpec != 0 {
			return s, true
		}
	}
	return sweep.Setting{}, false
}

// numericKinds are the kinds the registry's generated checks set.
var numericKinds = map[string]bool{kindInt: true, kindFloat: true, kindDuration: true, kindBytes: true}

// keyBound is a row's bound as the generated checks use it.
type keyBound struct {
	max, min       float64
	hasMax, hasMin bool
	from           string // where it comes from, for messages
}

// boundValue resolves a row's max or min: a number, or a constant of the
// module evaluated from its source.
func boundValue(consts map[string]*constSource, s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, nil
	}
	c, ok := consts[s]
	if !ok {
		return 0, fmt.Errorf("%s is not a constant of the module", s)
	}
	v, err := evalConst(consts, c)
	return v.v, err
}

// TestConfigKeysRegistry is the registry of configuration keys (issue 34
// Deliver 9): every key a user can set in the daemon's YAML (configKeys,
// by reflection over config.Config) has a row in configKeyRows or a
// bounded row of prober/sweep's settings table, and every row a key. A
// row's bound is a constant of the module or a number it says why of; a
// row without a bound says why none is needed. For each number and
// duration with a bound, at every place the key appears, it writes a
// minimal valid configuration (which must load), then the same with the
// key just beyond the bound (and just below its lowest value, where it
// has one), each of which config.Parse must refuse with an error naming
// the key.
func TestConfigKeysRegistry(t *testing.T) {
	consts := readConsts(t)
	keys := configKeys()
	rowKinds, rowPaths := map[string]string{}, map[string][]string{}
	for _, k := range keys {
		rowKinds[k.row] = k.kind
		rowPaths[k.row] = append(rowPaths[k.row], k.path)
	}
	bounds := map[string]keyBound{}
	var rows []string
	for r := range rowKinds {
		rows = append(rows, r)
	}
	sort.Strings(rows)
	for _, r := range rows {
		kind := rowKinds[r]
		row, listed := configKeyRows[r]
		if s, ok := sweepSetting(r); ok && kind != kindList && s.Bound.HasMax {
			if listed {
				t.Errorf("configKeyRows[%q]: prober/sweep's settings table bounds this key (%s); remove the row", r, s.Field)
			}
			// The table's lowest values are the CLI's: in a spec, zero
			// (and warmups' -1) stand for the default, so only the
			// upper bound is generated.
			bounds[r] = keyBound{max: s.Bound.Max, hasMax: true, from: "prober/sweep settings table, " + s.Field}
			continue
		}
		if !listed {
			t.Errorf("%s (a %s key at %s): no row in internal/archtest's configKeyRows: add one with its bound (a constant of the module, "+
				"enforced at load) or why it needs none (docs/security.md, \"Configuration keys\")", r, kind, strings.Join(rowPaths[r], ", "))
			continue
		}
		if row.max == "" && row.why == "" {
			t.Errorf("configKeyRows[%q]: give its bound (max) or why it needs none", r)
		}
		var b keyBound
		if row.max != "" {
			if _, err := strconv.ParseFloat(row.max, 64); err == nil && row.why == "" {
				t.Errorf("configKeyRows[%q]: the literal bound %s needs a why", r, row.max)
			}
			v, err := boundValue(consts, row.max)
			if err != nil {
				t.Errorf("configKeyRows[%q]: bound: %v", r, err)
				continue
			}
			b.max, b.hasMax, b.from = v, true, row.max
		}
		if row.min != "" {
			v, err := boundValue(consts, row.min)
			if err != nil {
				t.Errorf("configKeyRows[%q]: min: %v", r, err)
				continue
			}
			b.min, b.hasMin = v, true
		}
		sized := (kind == kindList || kind == kindMap || kind == kindString) && b.hasMax && row.ok != nil
		if (b.hasMax || b.hasMin) && numericKinds[kind] || sized {
			bounds[r] = b
		}
	}
	for r := range configKeyRows {
		if _, ok := rowKinds[r]; !ok {
			t.Errorf("configKeyRows[%q]: no such key in config.Config any more; remove the row", r)
		}
	}

	dir := t.TempDir()
	for name, body := range map[string]string{
		"dataset.jsonl": `{"prompt": "hello there", "output_tokens": 4}` + "\n",
		"trace.jsonl": `{"timestamp": 1000, "input_length": 1200, "output_length": 8, "hash_ids": [0, 1, 2]}` + "\n" +
			`{"timestamp": 2000, "input_length": 1200, "output_length": 8, "hash_ids": [0, 1, 3]}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "llmprobe.yml")
	parse := func(doc map[string]any) error {
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = config.Parse(data, file)
		return err
	}
	checked := 0
	for _, k := range keys {
		b, ok := bounds[k.row]
		if !ok {
			continue
		}
		row := configKeyRows[k.row]
		var okValue any
		if !numericKinds[k.kind] {
			okValue = sizedValue(k.kind, row.ok, 1)
		} else if row.ok != nil {
			okValue = row.ok
		}
		base, err := keyDoc(k.path, okValue, row.with)
		if err != nil {
			t.Errorf("%s: %v", k.path, err)
			continue
		}
		err = parse(base)
		if row.only != "" && !strings.Contains(k.path, row.only) {
			if err == nil {
				t.Errorf("%s: the check's context %v loads here, so the key applies: drop the row's only (%q)", k.path, row.with, row.only)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: the minimal configuration the check starts from does not load (fix the row's with): %v", k.path, err)
			continue
		}
		try := func(what string, v any) {
			doc, err := keyDoc(k.path, v, row.with)
			if err != nil {
				t.Errorf("%s: %v", k.path, err)
				return
			}
			err = parse(doc)
			switch {
			case err == nil:
				data, _ := yaml.Marshal(doc)
				t.Errorf("%s = %v (%s %s) loads: enforce the bound in prober/config's validation with an error naming the key\n%s", k.path, v, what, b.from, data)
			case !namesKey(err.Error(), k.path, row.namesMapping):
				t.Errorf("%s = %v (%s %s) is refused, but the error does not name the key: %v", k.path, v, what, b.from, err)
			}
			checked++
		}
		switch {
		case !numericKinds[k.kind]:
			try("beyond", sizedValue(k.kind, row.ok, int(b.max)+1))
		case b.hasMax:
			try("beyond", keyValue(k, b.max, +1))
		}
		if b.hasMin && numericKinds[k.kind] {
			try("below", keyValue(k, b.min, -1))
		}
	}
	t.Logf("%d keys (%d rows), %d numbers and durations, %d refusals generated", len(keys), len(rowKinds), countNumeric(keys), checked)

	// docs/security.md's counts.
	type count struct{ rows, paths, numeric int }
	counts := map[string]*count{}
	order := []string{"a bound, a constant of the module", "a bound, a number (a share or a ratio: 1)", "a bound of prober/sweep's settings table", "a reason, no bound needed"}
	for _, c := range order {
		counts[c] = &count{}
	}
	for _, r := range rows {
		row, listed := configKeyRows[r]
		c := order[3]
		switch _, tableRow := bounds[r]; {
		case !listed && tableRow:
			c = order[2]
		case row.max != "":
			c = order[0]
			if _, err := strconv.ParseFloat(row.max, 64); err == nil {
				c = order[1]
			}
		}
		counts[c].rows++
		counts[c].paths += len(rowPaths[r])
		if numericKinds[rowKinds[r]] {
			counts[c].numeric += len(rowPaths[r])
		}
	}
	var body strings.Builder
	body.WriteString("| rows with | rows | key paths | of which numbers and durations |\n|---|---|---|---|\n")
	for _, c := range order {
		fmt.Fprintf(&body, "| %s | %d | %d | %d |\n", c, counts[c].rows, counts[c].paths, counts[c].numeric)
	}
	fmt.Fprintf(&body, "| all | %d | %d | %d |\n\n%d refusals are generated and checked at load (beyond a bound, below a lowest value, one entry too many, one byte too long).\n",
		len(rowKinds), len(keys), countNumeric(keys), checked)
	path := filepath.Join(root, "docs", "security.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	newDoc, old, err := replaceBlock(string(doc), keysBegin, keysEnd, body.String())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case *updateBounds:
		if err := os.WriteFile(path, []byte(newDoc), 0o644); err != nil {
			t.Fatal(err)
		}
	case old != body.String():
		t.Errorf("docs/security.md's configuration key counts are stale; regenerate with go test ./internal/archtest -run TestConfigKeysRegistry -update:\n%s", body.String())
	}
}

// Markers of docs/security.md's generated key counts.
const (
	keysBegin = "<!-- configuration keys: counts generated by TestConfigKeysRegistry (go test ./internal/archtest -run TestConfigKeysRegistry -update) -->\n"
	keysEnd   = "<!-- end of the configuration key counts -->\n"
)

func countNumeric(keys []configKey) int {
	n := 0
	for _, k := range keys {
		if numericKinds[k.kind] {
			n++
		}
	}
	return n
}

// keyValue is the value just beyond v (dir +1) or just below it (-1), as
// the key's YAML takes it.
func keyValue(k configKey, v float64, dir int) any {
	var out any
	switch k.kind {
	case kindFloat:
		out = math.Nextafter(v, math.Inf(dir))
	case kindDuration:
		out = time.Duration(int64(v) + int64(dir)).String()
	default:
		switch {
		case dir > 0 && v >= math.MaxInt64:
			out = uint64(v) // MaxInt64 + 1 as a float is 2^63
		default:
			out = int64(v) + int64(dir)
		}
	}
	return out
}

// sizedValue is a list or a mapping of n entries made from the template
// tmpl, or a string of n bytes (tmpl's %s padded).
func sizedValue(kind string, tmpl any, n int) any {
	switch kind {
	case kindList:
		l := make([]any, n)
		for i := range l {
			l[i] = fillTemplate(tmpl, i)
		}
		return l
	case kindMap:
		m := make(map[string]any, n)
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = fillTemplate(tmpl, i)
		}
		return m
	}
	t := tmpl.(string)
	return fmt.Sprintf(t, strings.Repeat("a", max(1, n-(len(t)-2))))
}

// fillTemplate is entry i of a template: %d in strings is i, a number
// i+1, a mapping's values alike.
func fillTemplate(tmpl any, i int) any {
	switch t := tmpl.(type) {
	case string:
		if strings.Contains(t, "%d") {
			return fmt.Sprintf(t, i)
		}
		return t
	case int:
		return i + 1
	case float64:
		return float64(i + 1)
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, v := range t {
			m[k] = fillTemplate(v, i)
		}
		return m
	}
	return tmpl
}

// concretePath is a key's path as an error names it: the first entry of
// each list, the mapping key "k".
func concretePath(path string) string {
	return strings.ReplaceAll(strings.ReplaceAll(path, "[]", "[0]"), ".*", ".k")
}

var lastIndexRE = regexp.MustCompile(`\[0\]$`)

// namesKey reports whether an error names the key at path: its whole
// path, or the path of an enclosing mapping followed by the rest of the
// key's names as words ("targets[0].sweeps[0]: ... dataset: max_entries:",
// as prober/sweep words its errors). With mapping, the key's own name may
// be left out (the error names its mapping).
func namesKey(msg, path string, mapping bool) bool {
	p := lastIndexRE.ReplaceAllString(concretePath(path), "")
	if strings.Contains(msg, p) {
		return true
	}
	elems := strings.Split(p, ".")
	if mapping {
		elems = elems[:len(elems)-1]
		for len(elems) > 1 && strings.HasSuffix(elems[len(elems)-1], "[0]") {
			elems = elems[:len(elems)-1] // a distribution's choices[0]: the distribution
		}
		if strings.Contains(msg, strings.Join(elems, ".")) {
			return true
		}
	}
	lower := strings.ToLower(msg)
	for i := len(elems) - 1; i > 0; i-- {
		if !strings.Contains(msg, strings.Join(elems[:i], ".")) {
			continue
		}
		all := true
		for _, e := range elems[i:] {
			e = strings.ToLower(strings.TrimSuffix(e, "[0]"))
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(e) + `\b`).MatchString(lower) {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}

// skeletons are the entries a check's configuration starts from: the
// least a target, a probe, a sweep and a discovery entry need.
func skeleton(list string) map[string]any {
	switch list {
	case "targets":
		return map[string]any{"name": "t", "base_url": "http://127.0.0.1:9"}
	case "probes":
		return map[string]any{"name": "p", "rate": 1}
	case "sweeps":
		return map[string]any{"name": "s", "every": "24h", "rates": []any{1}}
	case "discovery":
		return map[string]any{"name": "d", "static_configs": []any{map[string]any{"targets": []any{"127.0.0.1:9"}}}}
	}
	return map[string]any{}
}

// keyDoc builds a minimal configuration that sets the key at path to v
// (nil: leaves it out), with the row's context around it.
func keyDoc(path string, v any, with map[string]any) (map[string]any, error) {
	root := map[string]any{}
	segs := strings.Split(strings.ReplaceAll(path, ".*", ".k"), ".")
	cur := root
	stack := []map[string]any{root}
	var target map[string]any
	for i, seg := range segs {
		name, list := strings.CutSuffix(seg, "[]")
		if i == len(segs)-1 {
			break
		}
		var child map[string]any
		if list {
			l, _ := cur[name].([]any)
			if len(l) == 0 {
				l = []any{skeleton(name)}
				cur[name] = l
			}
			child = l[0].(map[string]any)
		} else {
			child, _ = cur[name].(map[string]any)
			if child == nil || name == "input_tokens" || name == "output_tokens" {
				child = map[string]any{}
				cur[name] = child
			}
			if name == "workload" && i > 0 && segs[i-1] == "sweeps[]" {
				// A sweep's workload gives both lengths.
				child["input_tokens"] = map[string]any{"dist": "fixed", "value": 8}
				child["output_tokens"] = map[string]any{"dist": "fixed", "value": 8}
			}
		}
		if name == "targets" || name == "target" || (i > 0 && segs[i-1] == "modules") {
			target = child
		}
		cur = child
		stack = append(stack, cur)
	}
	if root["targets"] == nil && root["modules"] == nil && root["discovery"] == nil {
		root["targets"] = []any{skeleton("targets")}
	}
	for k, val := range with {
		m := stack[len(stack)-1]
		switch {
		case strings.HasPrefix(k, "^"):
			if target == nil {
				return nil, fmt.Errorf("with %q: no enclosing target or module", k)
			}
			m, k = target, k[1:]
		default:
			up := len(stack) - 1
			for strings.HasPrefix(k, "../") {
				if up == 0 {
					return nil, fmt.Errorf("with %q: above the top", k)
				}
				up, k = up-1, k[3:]
			}
			m = stack[up]
		}
		if val == nil {
			delete(m, k)
		} else {
			m[k] = val
		}
	}
	if v != nil {
		name, list := strings.CutSuffix(segs[len(segs)-1], "[]")
		if list {
			v = []any{v}
		}
		cur[name] = v
	}
	return root, nil
}

// TestConfigKeysWalk pins what configKeys finds: keys through structs,
// lists, mappings, pointers, inlined and embedded structs, the anchors'
// rows and discovery's mechanisms.
func TestConfigKeysWalk(t *testing.T) {
	got := map[string]configKey{}
	for _, k := range configKeys() {
		got[k.path] = k
	}
	for _, w := range []struct{ path, row, kind string }{
		{"targets", "targets", kindList},
		{"targets[].probes[].rate", "target.probes[].rate", kindFloat},
		{"targets[].probes[].answer_checks.every", "target.probes[].answer_checks.every", kindDuration},         // a pointer
		{"targets[].sweeps[].every", "target.sweeps[].every", kindDuration},                                     // the schedule beside the spec
		{"targets[].sweeps[].num_prompts", "target.sweeps[].num_prompts", kindInt},                              // the sweep table's row
		{"targets[].sweeps[].rates[]", "target.sweeps[].rates[]", kindFloat},                                    // the table's Rates: a list of numbers
		{"targets[].sweeps[].goodput.ttft", "slo.ttft", kindDuration},                                           // the table's SLO
		{"targets[].sweeps[].workload.prefix_tokens", "workload.prefix_tokens", kindInt},                        // the spec's workload
		{"discovery[].target.probes[].workload.multi_turn.turns.max", "workload.multi_turn.turns.max", kindInt}, // embedded LengthSpec
		{"modules.*.workload.request.features[].tools[].description", "workload.request.features[].tools[].description", kindString},
		{"modules.*.timeout", "modules.*.timeout", kindDuration},
		{"global.slo.tpot", "slo.tpot", kindDuration},
		{"targets[].max_body_bytes", "target.max_body_bytes", kindBytes},
		{"targets[].labels", "target.labels", kindMap},
		{"targets[].http_config", "target.http_config", kindExternal},
		{"discovery[].file_sd_configs", "discovery[].file_sd_configs", kindExternal},
		{"tracing.headers.*", "tracing.headers.*", kindString},
	} {
		k, ok := got[w.path]
		if !ok || k.row != w.row || k.kind != w.kind {
			t.Errorf("configKeys()[%q] = %+v (found %v), want row %q kind %s", w.path, k, ok, w.row, w.kind)
		}
	}
}

// TestNamesKey pins when a refusal names its key.
func TestNamesKey(t *testing.T) {
	for _, c := range []struct {
		msg, path string
		mapping   bool
		want      bool
	}{
		{"f.yml:3: targets[0].probes[0].rate: must be > 0, got -1", "targets[].probes[].rate", false, true},
		{"f.yml:3: targets[0].sweeps[0]: Workload.Dataset: dataset: max_entries: must be 0 to 200000", "targets[].sweeps[].workload.dataset.max_entries", false, true},
		{"f.yml:3: modules.k.workload.input_tokens: choices[0].value must be >= 1", "modules.*.workload.input_tokens.choices[].value", false, true},
		{"f.yml:3: targets[0].probes[0]: must be > 0", "targets[].probes[].rate", false, false},
		{"f.yml:3: targets[0].probes[0].workload.multi_turn.turns: can draw 65 turns", "targets[].probes[].workload.multi_turn.turns.max", false, false},
		{"f.yml:3: targets[0].probes[0].workload.multi_turn.turns: can draw 65 turns", "targets[].probes[].workload.multi_turn.turns.max", true, true},
		{"f.yml:3: targets[0].name: required", "targets[].timeout", false, false},
	} {
		if got := namesKey(c.msg, c.path, c.mapping); got != c.want {
			t.Errorf("namesKey(%q, %q, %v) = %v, want %v", c.msg, c.path, c.mapping, got, c.want)
		}
	}
}

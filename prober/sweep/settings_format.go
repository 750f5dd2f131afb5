package sweep

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Format returns the command-line arguments that give c's value of the
// setting to `llmprobe sweep` (["--rates", "1,2"]; a list setting repeats
// its flag, a switch is its flag alone), nil when c holds what the command
// takes without the flag (the default, or the zero a ZeroDefault setting
// reads as it) or the setting has no flag. Setting.Apply reads the text
// back: parsing the arguments of every setting of a valid Config gives
// that Config again (CommandLine's test holds every row to it). Settings
// that are no text on a command line say so instead: an API key or an
// HTTP config (read from files the command is given), a workload built
// from a config file's keys (a placeholder pointing to the manifest).
func (s *Setting) Format(c *Config) []string {
	if s.Flag == "" || s.Field == "" || s.Internal {
		return nil
	}
	if f, ok := formatters[s.Field]; ok {
		return f(s, c)
	}
	if !workloadRowApplies(s.Field, c) {
		return nil
	}
	v, ok := fieldValue(reflect.ValueOf(c).Elem(), s.Field)
	if !ok {
		return nil
	}
	return s.formatValue(v)
}

// formatValue formats one value of the setting's field (a pointer's
// target; a length spec's value), nil when it is the default.
func (s *Setting) formatValue(v reflect.Value) []string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	} else if v.IsZero() && (s.Bound.ZeroDefault || s.Default == "" || s.Kind == KindBool) {
		return nil
	}
	if v.Kind() == reflect.Struct && v.FieldByName("Value").IsValid() { // a length spec
		v = v.FieldByName("Value")
	}
	var text string
	switch x := v.Interface().(type) {
	case bool:
		if !x {
			return nil
		}
		return []string{"--" + s.Flag}
	case []string:
		var a []string
		for _, e := range x {
			a = append(a, "--"+s.Flag, e)
		}
		return a
	case time.Duration:
		text = x.String()
	case float64:
		text = strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		text = strconv.Itoa(x)
	case int64:
		text = strconv.FormatInt(x, 10)
	case string:
		text = x
	default:
		panic(fmt.Sprintf("sweep: setting %s: no text for a %T", s.Field, x))
	}
	if s.isDefault(text) {
		return nil
	}
	return []string{"--" + s.Flag, text}
}

// isDefault reports whether text is the setting's default, compared as
// values of its kind ("1m0s" is "60s").
func (s *Setting) isDefault(text string) bool {
	if s.Default == "" {
		return false
	}
	v, err := parseKind(s.Kind, text)
	return text == s.Default || (err == nil && reflect.DeepEqual(v, s.DefaultValue()))
}

// workloadSourceConfig is Config.WorkloadSource of a workload a config
// file's or an API body's keys built (no file to name).
const workloadSourceConfig = "config"

// workloadRowApplies reports whether a Workload.* setting's flag gives c's
// workload: the length flags build a workload of flags, the dataset flags
// a dataset's, the request flags any workload's request section but one
// built from a config's keys (the Workload row's placeholder stands for
// it).
func workloadRowApplies(field string, c *Config) bool {
	rest, ok := strings.CutPrefix(field, "Workload.")
	if !ok {
		return true
	}
	w := &c.Workload
	switch {
	case strings.HasPrefix(rest, "Request."):
		return w.Request != nil && c.WorkloadSource != workloadSourceConfig
	case strings.HasPrefix(rest, "Dataset"):
		return w.Dataset != nil
	case rest == "OutputTokens" && w.Dataset != nil:
		return w.OutputTokens.Dist != ""
	}
	return c.WorkloadSource == "flags" && c.Trace == nil
}

// joinNumbers formats a list setting's numbers with commas (--rates).
func joinNumbers[T int | float64](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(float64(x), 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// flagArgs is ["--flag", text], nil for text "".
func flagArgs(s *Setting, text string) []string {
	if text == "" {
		return nil
	}
	return []string{"--" + s.Flag, text}
}

// formatters format the settings whose value is no scalar of their kind:
// the inverses of parsers, and the settings a command line gives by file.
var formatters = map[string]func(s *Setting, c *Config) []string{
	"Rates": func(s *Setting, c *Config) []string {
		switch {
		case c.Auto:
			return flagArgs(s, "auto")
		case len(c.Rates) > 0:
			return flagArgs(s, joinNumbers(c.Rates))
		}
		return nil
	},
	"Concurrency": func(s *Setting, c *Config) []string { return flagArgs(s, joinNumbers(c.Concurrency)) },
	"Percentiles": func(s *Setting, c *Config) []string { return flagArgs(s, joinNumbers(c.Percentiles)) },
	// A replay's file, speeds and block size, together (the Trace row
	// formats TraceSpeeds too).
	"Trace": func(s *Setting, c *Config) []string {
		if c.Trace == nil {
			return nil
		}
		return []string{"--" + s.Flag, c.Trace.Path, "--trace-speed", joinNumbers(c.TraceSpeeds),
			"--trace-block-size", strconv.Itoa(c.Trace.BlockSize)}
	},
	"TraceSpeeds": func(*Setting, *Config) []string { return nil },
	"SLO": func(s *Setting, c *Config) []string {
		var a []string
		for _, pair := range strings.Fields(c.SLO.GoodputArgs()) {
			a = append(a, "--"+s.Flag, pair)
		}
		return a
	},
	"Metadata": func(s *Setting, c *Config) []string {
		var a []string
		for _, k := range slices.Sorted(maps.Keys(c.Metadata)) {
			a = append(a, "--"+s.Flag, k+"="+c.Metadata[k])
		}
		return a
	},
	"StartAt": func(s *Setting, c *Config) []string {
		if c.StartAt.IsZero() {
			return nil
		}
		return flagArgs(s, c.StartAt.UTC().Format(time.RFC3339Nano))
	},
	"Search.Start": func(s *Setting, c *Config) []string {
		if !c.Auto || c.Search.Start == 0 {
			return nil
		}
		return flagArgs(s, strconv.FormatFloat(c.Search.Start, 'f', -1, 64))
	},
	"MaxStepBytes": func(s *Setting, c *Config) []string {
		if c.MaxStepBytes == 0 || c.MaxStepBytes == DefaultMaxStepBytes {
			return nil
		}
		return flagArgs(s, strconv.FormatInt(c.MaxStepBytes, 10))
	},
	"MetricsURL": func(s *Setting, c *Config) []string {
		if c.MetricsURL == c.Target+"/metrics" {
			return nil
		}
		return flagArgs(s, c.MetricsURL)
	},
	"AnswerChecks": func(s *Setting, c *Config) []string {
		if c.AnswerChecks == nil {
			return nil
		}
		return flagArgs(s, c.AnswerChecks.Name)
	},
	"Workload": func(s *Setting, c *Config) []string {
		switch src := c.WorkloadSource; {
		case src == workloadSourceConfig && c.Trace != nil:
			if c.Workload.Request != nil {
				return flagArgs(s, "<the sweep's request features: see the manifest>")
			}
		case src == workloadSourceConfig:
			return flagArgs(s, "<the sweep's workload: see the manifest>")
		case src != "flags" && c.Workload.Dataset == nil && c.Trace == nil:
			return flagArgs(s, src)
		}
		return nil
	},
	"Workload.Dataset": func(s *Setting, c *Config) []string {
		if c.Workload.Dataset == nil {
			return nil
		}
		return flagArgs(s, c.Workload.Dataset.Path)
	},
	"Workload.Request.ExtraBody": func(s *Setting, c *Config) []string {
		if !workloadRowApplies(s.Field, c) || len(c.Workload.Request.ExtraBody) == 0 {
			return nil
		}
		b, err := json.Marshal(c.Workload.Request.ExtraBody)
		if err != nil {
			return nil
		}
		return flagArgs(s, string(b))
	},
	// Read from files the command line names: an API key is never text
	// on a command line, an HTTP config has no flag of its values.
	"APIKey":     func(*Setting, *Config) []string { return nil },
	"HTTPConfig": func(*Setting, *Config) []string { return nil },
}

// CommandLine is the `llmprobe sweep` command line equivalent to c: every
// setting's Format, in the table's order (the API key and HTTP config left
// out: the command reads them from files).
func CommandLine(c *Config) []string {
	a := []string{"llmprobe", "sweep"}
	for i := range settingsTable {
		s := &settingsTable[i]
		if s.Surfaces&SurfaceSweep == 0 {
			continue
		}
		a = append(a, s.Format(c)...)
	}
	return a
}

package rundir

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/answer"
	lpconfig "github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/knob"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Config turns the flags into a validated sweep.Config: the
// table's settings (applySettings, each checked against its bound), then
// the ones read from files or built together (flags given together are
// refused by prober/knob's rules, those a scheduled sweep and the API
// keep), then Config.Validate, every rule of a Config. Errors are
// *FlagError or *sweep.FieldError (exit 2; FlagErrorText names the flag)
// unless reading a file failed.
func (f *SweepFlags) Config() (sweep.Config, error) {
	c := sweep.Config{Target: strings.TrimRight(f.str("target"), "/")}
	if err := applySettings(f, &c); err != nil {
		return c, err
	}
	if f.num("num-prompts") == 0 || f.isSet("duration") {
		c.Duration = f.dur("duration")
	}
	for _, apply := range []func(*SweepFlags, *sweep.Config) error{
		applyWorkload, applyLoad, applyGoodput, applyDecision, applyStepBytes, applyCredentials, applySweepTraceFlags,
		applyAnswerChecks,
	} {
		if err := apply(f, &c); err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// applyWorkload sets the workload of --dataset, --workload or the length
// flags, and the request flags over it.
func applyWorkload(f *SweepFlags, c *sweep.Config) error {
	file := f.str("workload")
	switch {
	case f.str("dataset") != "":
		if err := applyDataset(f, c); err != nil {
			return err
		}
	case file != "":
		// One rule with a scheduled sweep's and the API's (prober/knob):
		// --prefix-len over a workload file is refused as the other
		// length flags are (the file has prefix_tokens).
		lengths := f.isSet("input-len") || f.isSet("output-len") || f.isSet("range-ratio") || f.num("prefix-len") != 0
		if err := sweep.ProblemError(knob.WorkloadOrLengths(true, lengths)); err != nil {
			return err
		}
		w, err := lpconfig.LoadWorkloadFile(file)
		if err != nil {
			return &FlagError{Flag: "workload", Err: err}
		}
		c.Workload, c.WorkloadSource = w, file
	default:
		w, err := sweep.FlagWorkload(f.num("input-len"), f.num("output-len"), f.flt("range-ratio"), f.num("prefix-len"))
		if err != nil {
			return err
		}
		c.Workload, c.WorkloadSource = w, "flags"
	}
	return applyRequestFlags(f, &c.Workload)
}

// applyLoad sets --rates (default auto) or --concurrency.
func applyLoad(f *SweepFlags, c *sweep.Config) error {
	if err := sweep.ProblemError(knob.RatesOrConcurrency(f.isSet("rates"), f.isSet("concurrency"))); err != nil {
		return err
	}
	if f.isSet("concurrency") {
		return sweep.LookupField("Concurrency").Apply(c, f.str("concurrency"))
	}
	r := f.str("rates")
	if !f.isSet("rates") {
		r = "auto"
	}
	return sweep.LookupField("Rates").Apply(c, r)
}

// applyGoodput sets the SLO of --goodput and the pairs after it.
func applyGoodput(f *SweepFlags, c *sweep.Config) error {
	pairs := f.strs("goodput")
	if len(f.goodputArgs) > 0 && len(pairs) == 0 {
		return &FlagError{Flag: "goodput", Err: fmt.Errorf("unexpected argument %q (KEY:VALUE pairs follow --goodput)", f.goodputArgs[0])}
	}
	return sweep.LookupField("SLO").Apply(c, append(append([]string{}, pairs...), f.goodputArgs...))
}

// applyAnswerChecks loads the check set of --answer-checks: builtin or a
// JSONL file (a file it cannot read or parse is a *FlagError: exit 2).
// Config.Validate checks that the sweep's API can send every check.
func applyAnswerChecks(f *SweepFlags, c *sweep.Config) error {
	name := f.str("answer-checks")
	if name == "" {
		return nil
	}
	set, err := answer.LoadSet(name)
	if err != nil {
		return &FlagError{Flag: "answer-checks", Err: err}
	}
	c.AnswerChecks = set
	return nil
}

// applyCredentials reads --api-key-file and --http.config.file.
func applyCredentials(f *SweepFlags, c *sweep.Config) error {
	keyFile := f.str("api-key-file")
	if keyFile != "" {
		key, err := ReadAPIKeyFile(keyFile)
		if err != nil {
			return &FlagError{Flag: "api-key-file", Err: fmt.Errorf("read: %w", err)}
		}
		c.APIKey = key
	}
	var err error
	c.HTTPConfig, err = LoadHTTPConfigFlag("http.config.file", f.str("http.config.file"), keyFile)
	return err
}

// MaxAPIKeyFileBytes caps what sweep reads from --api-key-file, as the
// configuration's api_key_file is capped.
const MaxAPIKeyFileBytes = 64 << 10

// ReadAPIKeyFile reads the API key in the file at path (at most
// MaxAPIKeyFileBytes), without the whitespace around it.
func ReadAPIKeyFile(path string) (config.Secret, error) {
	b, err := ReadCapped(path, MaxAPIKeyFileBytes, "an API key file")
	if err != nil {
		return "", err
	}
	return config.Secret(strings.TrimSpace(string(b))), nil
}

// ReadCapped reads the file at path, at most limit bytes (config.ReadFile):
// a larger or endless file (/dev/zero) is an error naming the file and the
// cap on what (e.g. "a workload file").
func ReadCapped(path string, limit int64, what string) ([]byte, error) {
	b, err := lpconfig.ReadFile(path, limit)
	if te, ok := errors.AsType[*lpconfig.TooLargeError](err); ok {
		return nil, fmt.Errorf("%s: the file is larger than %v, the cap on %s", path, lpconfig.ByteSize(te.Limit), what)
	}
	return b, err
}

// FlagError is a command-line error that names the flag at fault; the CLI
// prints it as one line and exits 2.
type FlagError struct {
	Flag string // the flag's name, without "--"
	Err  error
}

// Error formats the error as "--flag: reason".
func (e *FlagError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *FlagError) Unwrap() error { return e.Err }

// IsFlagError reports whether err names a flag (a *FlagError or a
// *sweep.FieldError): a usage error, exit 2.
func IsFlagError(err error) bool {
	var fe *FlagError
	return errors.As(err, &fe) || sweep.IsFieldError(err)
}

// FlagErrorText is err's message, a *sweep.FieldError in it as
// "--flag: reason" with the settings it refers to spelled as flags (a
// field without a flag keeps its name).
func FlagErrorText(err error) string { return sweep.ErrorText(err, sweep.FlagSpelling) }

// special are the settings Config sets itself (files to read,
// a workload to build, flags that go together); applySettings sets the
// others from the table.
var special = map[string]bool{
	"Target": true, "APIKey": true, "HTTPConfig": true, "Workload": true, "Workload.InputTokens": true,
	"Workload.OutputTokens": true, "Workload.InputTokens.RangeRatio": true, "Workload.PrefixTokens": true,
	"Rates": true, "Concurrency": true, "Duration": true, "SLO": true, "MaxStepBytes": true, "Trace": true,
	"TraceSpeeds": true, "AnswerChecks": true,
}

// applySettings sets every Config field of a flag that maps onto it
// directly (sweep.Setting.Apply: the table's bound, parsing lists).
func applySettings(f *SweepFlags, c *sweep.Config) error {
	for _, s := range sweep.Settings() {
		if s.Field == "" || s.Internal || special[s.Field] || strings.HasPrefix(s.Field, "Workload.") {
			continue
		}
		v := f.value(s.Flag)
		if v == nil {
			continue
		}
		if err := s.Apply(c, v); err != nil {
			return err
		}
	}
	return nil
}

// applyStepBytes parses --max-step-bytes and checks it against the
// table's bound (the text quoted in the reason).
func applyStepBytes(f *SweepFlags, c *sweep.Config) error {
	text := f.str("max-step-bytes")
	n, err := lpconfig.ParseByteSize(text)
	if err != nil {
		return &FlagError{Flag: "max-step-bytes", Err: err}
	}
	if err := sweep.LookupField("MaxStepBytes").Check(float64(n), strconv.Quote(text)); err != nil {
		return err
	}
	c.MaxStepBytes = int64(n)
	return nil
}

// applyDecision records --decision and --rollback-if as metadata
// (redacted like every metadata value); a --metadata pair of the same key
// is an error naming the flag.
func applyDecision(f *SweepFlags, c *sweep.Config) error {
	for _, kv := range []struct{ flag, key string }{{"decision", report.MetaDecision}, {"rollback-if", report.MetaRollbackIf}} {
		v := f.str(kv.flag)
		if v == "" {
			continue
		}
		if _, dup := c.Metadata[kv.key]; dup {
			return &FlagError{Flag: kv.flag, Err: fmt.Errorf("also given as --metadata %s=...", kv.key)}
		}
		c.Metadata[kv.key] = redact.Text(v)
	}
	return nil
}

// LoadHTTPConfigFlag reads the HTTP config file named by --flag (empty:
// none) as the daemon reads a target's http_config
// (lpconfig.LoadHTTPConfigFile). An error is a *FlagError naming the flag,
// the file, the line and the field; credentials in it besides
// --api-key-file (apiKeyFile) are refused as ambiguous.
func LoadHTTPConfigFlag(flag, path, apiKeyFile string) (config.HTTPClientConfig, error) {
	if path == "" {
		return config.HTTPClientConfig{}, nil
	}
	h, err := lpconfig.LoadHTTPConfigFile(path)
	if err != nil {
		return h, &FlagError{Flag: flag, Err: err}
	}
	if apiKeyFile != "" && (h.Authorization != nil || h.BasicAuth != nil || h.OAuth2 != nil) {
		return h, &FlagError{Flag: flag, Err: fmt.Errorf("%s: ambiguous credentials: --api-key-file and the file's "+
			"authorization, basic_auth or oauth2 both set the Authorization header; keep one", path)}
	}
	return h, nil
}

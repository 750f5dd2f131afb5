package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/slo"
)

const notRecorded = fingerprint.NotRecorded

// Fingerprint fields compared between the sides (--vary names them).
const (
	FieldEndpoint       = "endpoint"
	FieldHTTPConfig     = "http_config"
	FieldModel          = "model"
	FieldModelRoot      = "model_root"
	FieldMaxModelLen    = "max_model_len"
	FieldServerVersion  = "server_version"
	FieldEngineConfig   = "engine_config"
	FieldAPI            = "api"
	FieldTokenizer      = "tokenizer"
	FieldWorkload       = "workload"
	FieldSeed           = "seed"
	FieldMode           = "mode"
	FieldRate           = "rate"
	FieldArrival        = "arrival"
	FieldMaxConcurrency = "max_concurrency"
	FieldRequests       = "requests"
	FieldWarmups        = "warmups"
	FieldSLO            = "slo"
	FieldClient         = "client"
	FieldTool           = "llmprobe"
)

// FieldNames lists every fingerprint field in report order.
var FieldNames = []string{
	FieldEndpoint, FieldHTTPConfig, FieldModel, FieldModelRoot, FieldMaxModelLen, FieldServerVersion, FieldEngineConfig, FieldAPI,
	FieldTokenizer, FieldWorkload, FieldSeed, FieldMode, FieldRate, FieldArrival, FieldMaxConcurrency, FieldRequests,
	FieldWarmups, FieldSLO, FieldClient, FieldTool,
}

// requiredFields must be recorded on both sides for a comparison to be
// valid (unless declared in --vary): what decides whether the two servers
// ran the same model, software and configuration, and the same workload.
var requiredFields = []string{FieldModel, FieldServerVersion, FieldEngineConfig, FieldWorkload, FieldRate}

// DefaultVary is --vary's default: only the endpoint may differ.
var DefaultVary = []string{FieldEndpoint}

// ParseVary parses --vary: comma-separated field names (FieldNames).
func ParseVary(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(FieldNames, f) {
			return nil, fmt.Errorf("unknown fingerprint field %q (one of %s)", f, strings.Join(FieldNames, ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// FieldsOf extracts the compared fields of an llmprobe fingerprint; a field
// the fingerprint holds as not-recorded is left out.
func FieldsOf(fp fingerprint.Fingerprint) map[string]string {
	out := map[string]string{}
	set := func(k, v string) {
		if v != "" && v != notRecorded {
			out[k] = v
		}
	}
	t := fp.Target
	set(FieldEndpoint, t.URL)
	if t.HTTPConfig != nil {
		set(FieldHTTPConfig, t.HTTPConfig.String())
	}
	set(FieldModel, t.Model)
	set(FieldModelRoot, t.Root)
	if t.MaxModelLen.Recorded {
		set(FieldMaxModelLen, strconv.FormatInt(t.MaxModelLen.Value, 10))
	}
	set(FieldServerVersion, t.ServerVersion)
	if t.EngineConfig != nil {
		keys := slices.Sorted(maps.Keys(t.EngineConfig))
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+t.EngineConfig[k])
		}
		set(FieldEngineConfig, "{"+strings.Join(parts, ",")+"}")
	}
	set(FieldAPI, t.API)
	set(FieldTokenizer, t.Tokenizer)
	if w := fp.Workload.SHA256; w != "" && w != notRecorded {
		v := "sha256:" + w
		set(FieldWorkload, v)
	}
	l := fp.Load
	if l.Mode == "" || l.Mode == notRecorded {
		// A fingerprint without load settings (not written by a sweep).
	} else {
		set(FieldSeed, strconv.FormatInt(l.Seed, 10))
		set(FieldMode, l.Mode)
		switch {
		case len(l.Concurrency) > 0:
			var cs []string
			for _, c := range l.Concurrency {
				cs = append(cs, strconv.Itoa(c))
			}
			set(FieldRate, "concurrency="+strings.Join(cs, ","))
		case len(l.Rates) > 0:
			set(FieldRate, strings.Join(l.Rates, ","))
		}
		arr := l.Arrival
		if arr != "" {
			arr += " burstiness=" + strconv.FormatFloat(l.Burstiness, 'g', -1, 64)
			if l.Unscaled {
				arr += " unscaled"
			}
			set(FieldArrival, arr)
		}
		set(FieldMaxConcurrency, strconv.Itoa(l.MaxConcurrency))
		switch {
		case l.NumPrompts > 0:
			set(FieldRequests, "num_prompts="+strconv.Itoa(l.NumPrompts))
		case l.Duration != "":
			set(FieldRequests, "duration="+l.Duration+" min_prompts="+strconv.Itoa(l.MinPrompts))
		}
		w := strconv.Itoa(l.Warmups)
		if l.FreshPrefix {
			w += " fresh-prefix"
		}
		set(FieldWarmups, w)
		set(FieldSLO, sloOfMS(l.Goodput).String())
	}
	c := fp.Client
	if c.Hostname != "" && c.Hostname != notRecorded {
		set(FieldClient, fmt.Sprintf("%s (%s, %d cores, %s/%s)", c.Hostname, c.CPUModel, c.Cores, c.OS, c.Arch))
	}
	if fp.Tool.Version != "" && (fp.Tool.Version != notRecorded || fp.Tool.Revision != notRecorded) {
		set(FieldTool, fp.Tool.Version+" "+fp.Tool.Revision)
	}
	return out
}

// sloOfMS converts thresholds in ms by vLLM key into an SLO.
func sloOfMS(m map[string]float64) slo.SLO {
	var s slo.SLO
	d := func(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }
	s.TTFT, s.TPOT, s.E2EL, s.TTFA = d(m[slo.NameTTFT]), d(m[slo.NameTPOT]), d(m[slo.NameE2EL]), d(m[slo.NameTTFA])
	return s
}

// rateText formats a rate as a level label does ("4", "0.5", "inf").
func rateText(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// FieldDiff is one fingerprint field of the two sides.
type FieldDiff struct {
	Field string `json:"field"`
	// Baseline and Candidate are the values (comma-joined when a side's
	// rounds took several; "not-recorded" when absent).
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Status is "same", "differs", "varied" (differs, and declared in
	// --vary), "changed" (a side's rounds disagree among themselves) or
	// "not-recorded".
	Status string `json:"status"`
}

// Field statuses.
const (
	FieldSame        = "same"
	FieldDiffers     = "differs"
	FieldVaried      = "varied"
	FieldChanged     = "changed"
	FieldNotRecorded = "not-recorded"
)

// DiffFields compares the fingerprint fields of the sides. A field in vary
// may differ (and need not be recorded); the seed and the rate may take
// several values per side when both sides ran the same set (paired rounds,
// a ladder of files).
func DiffFields(b, c map[string][]string, vary []string) []FieldDiff {
	var out []FieldDiff
	for _, f := range FieldNames {
		bv, bok := b[f]
		cv, cok := c[f]
		d := FieldDiff{Field: f, Baseline: joinOr(bv), Candidate: joinOr(cv)}
		varied := slices.Contains(vary, f)
		switch {
		case !bok || !cok:
			d.Status = FieldNotRecorded
		case slices.Equal(bv, cv) && (len(bv) == 1 || f == FieldSeed || f == FieldRate):
			d.Status = FieldSame
		case varied:
			d.Status = FieldVaried
		case len(bv) > 1 || len(cv) > 1:
			d.Status = FieldChanged
		default:
			d.Status = FieldDiffers
		}
		if d.Status == FieldNotRecorded && varied {
			d.Status = FieldVaried
		}
		out = append(out, d)
	}
	return out
}

func joinOr(vs []string) string {
	if len(vs) == 0 {
		return notRecorded
	}
	return strings.Join(vs, ", ")
}

package knob

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	"github.com/llmprobe/llmprobe/prober/arrival"
)

// Problem is a knob's value that a rule refuses. Knob is the knob at
// fault as a sweep.Config field path ("Burstiness", "Workload"); Reason
// says why, the knobs it names in braces ("{Arrival}"), for each surface
// to spell as its users write them (arrival, --arrival): Text, or
// prober/sweep's FieldError.Reason.
type Problem struct {
	Knob, Reason string
}

// Error is the reason spelled with the YAML / API keys.
func (p *Problem) Error() string { return p.Text(Key) }

// Text is the reason with the knobs it names spelled by spell (Render).
func (p *Problem) Text(spell func(field string) string) string { return Render(p.Reason, spell) }

// refPattern matches a knob named in a reason: its field path in braces
// ("{Workload.PrefixTokens}").
var refPattern = regexp.MustCompile(`\{[A-Z][A-Za-z]*(\.[A-Z][A-Za-z]*)*\}`)

// Render replaces the knobs a reason names in braces with their spelling
// by spell; a knob spell has no name for (or a nil spell) keeps its field
// path. prober/sweep's FieldError.Reason renders with it too.
func Render(reason string, spell func(field string) string) string {
	return refPattern.ReplaceAllStringFunc(reason, func(m string) string {
		field := m[1 : len(m)-1]
		if spell != nil {
			if s := spell(field); s != "" {
				return s
			}
		}
		return field
	})
}

// keys are the YAML / API keys of the knobs these rules name: a probe's
// and a scheduled sweep's alike.
var keys = map[string]string{
	"Arrival": "arrival", "Burstiness": "burstiness", "Rates": "rates", "Concurrency": "concurrency",
	"MaxConcurrency": "max_concurrency", "Workload": "workload", "Workload.InputTokens": "input_len",
	"Workload.OutputTokens": "output_len", "Workload.InputTokens.RangeRatio": "range_ratio",
	"Workload.PrefixTokens": "prefix_len",
}

// Key spells a knob these rules name as its YAML / API key ("" when
// none).
func Key(field string) string { return keys[field] }

// Texts of the shared bounds, each followed by ", got <value>" where it
// is reported.
var (
	// InFlightText is the bound of MaxInFlight.
	InFlightText = "must be at most " + strconv.Itoa(MaxInFlight) + " requests in flight (each holds a socket and a goroutine; shard a sweep for more)"
	// CostPerHourText is the bound of a price (0: none).
	CostPerHourText = "must be >= 0 and at most " + strconv.FormatFloat(MaxCostPerHour, 'g', -1, 64) + " USD per hour (0: no price)"
	// TimeoutText is the bound of a request's timeout above MaxTimeout.
	TimeoutText = "must be at most 24h"
	// BurstinessText is the bound of a gamma shape.
	BurstinessText = fmt.Sprintf("must be between %v and %v (gaps with a coefficient of variation of %s to %s)",
		arrival.MinBurstiness, float64(arrival.MaxBurstiness), GapCV(arrival.MinBurstiness), GapCV(arrival.MaxBurstiness))
)

// GapCV is the coefficient of variation of the gaps of gamma arrivals of
// shape burstiness, 1/√burstiness, to one significant digit.
func GapCV(burstiness float64) string {
	cv := 1 / math.Sqrt(burstiness)
	unit := math.Pow10(int(math.Floor(math.Log10(cv))))
	return strconv.FormatFloat(math.Round(cv/unit)*unit, 'f', -1, 64)
}

// Arrival checks an arrival process and its gamma shape, for a probe and
// a sweep alike: the kind is poisson, gamma or constant; the burstiness
// within [arrival.MinBurstiness, arrival.MaxBurstiness]; and a burstiness
// other than 1 comes with gamma arrivals (the other processes have no
// shape: it would be ignored without a word).
func Arrival(kind string, burstiness float64) *Problem {
	switch kind {
	case arrival.KindPoisson, arrival.KindGamma, arrival.KindConstant:
	default:
		return &Problem{"Arrival", fmt.Sprintf("must be one of %s, %s, %s, got %q",
			arrival.KindPoisson, arrival.KindGamma, arrival.KindConstant, kind)}
	}
	if !(burstiness >= arrival.MinBurstiness && burstiness <= arrival.MaxBurstiness) {
		return &Problem{"Burstiness", fmt.Sprintf("%s, got %v", BurstinessText, burstiness)}
	}
	if burstiness != 1 && kind != arrival.KindGamma {
		return &Problem{"Burstiness", fmt.Sprintf("%v needs {Arrival} %s ({Arrival} is %s)", burstiness, arrival.KindGamma, kind)}
	}
	return nil
}

// WorkloadOrLengths refuses a workload (a file, or a spec's workload:)
// given together with any of the length knobs of vllm bench serve's random
// workload (input and output length, range ratio, prefix length), which
// would build another one: one rule for the sweep's flags, a scheduled
// sweep and the sweep API.
func WorkloadOrLengths(workload, lengths bool) *Problem {
	if workload && lengths {
		return &Problem{"Workload", "give {Workload} or {Workload.InputTokens}/{Workload.OutputTokens}/" +
			"{Workload.InputTokens.RangeRatio}/{Workload.PrefixTokens}, not both"}
	}
	return nil
}

// RatesOrConcurrency refuses open-loop rates given together with
// closed-loop concurrency levels.
func RatesOrConcurrency(rates, concurrency bool) *Problem {
	if rates && concurrency {
		return &Problem{"Concurrency", "give {Rates} or {Concurrency}, not both (use {Rates} with {MaxConcurrency} for an open loop with a cap)"}
	}
	return nil
}

// InFlight checks a number of requests in flight against MaxInFlight.
func InFlight(knob string, n int) *Problem {
	if n > MaxInFlight {
		return &Problem{knob, fmt.Sprintf("%s, got %d", InFlightText, n)}
	}
	return nil
}

// CostPerHour checks a price in USD per hour: 0 (none), or > 0, finite
// and at most MaxCostPerHour.
func CostPerHour(knob string, v float64) *Problem {
	if !(v >= 0 && v <= MaxCostPerHour) {
		return &Problem{knob, fmt.Sprintf("%s, got %v", CostPerHourText, v)}
	}
	return nil
}

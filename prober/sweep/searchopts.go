package sweep

// SearchOptions configures the adaptive knee search (--rates auto). The zero
// value of a field selects its default.
type SearchOptions struct {
	// Start is the first rate tried, req/s. Default 1. The sweep sets it
	// from a closed-loop throughput probe unless --auto-start is given.
	Start float64
	// Factor multiplies the rate while every step passes. Default 2
	// (doubling).
	Factor float64
	// Tolerance is the relative width at which the search stops: it ends
	// once the highest passing rate lo and the lowest failing rate hi satisfy
	// hi <= lo*(1+Tolerance), so lo is within Tolerance of the knee. Default
	// DefaultAutoTolerance (5 %).
	Tolerance float64
	// MaxSteps bounds the number of steps run, reruns of invalid levels,
	// longer reruns and the confirmation included. Default 16.
	MaxSteps int
	// Retries is how many more times an invalid level is run before the
	// search counts it as unmeasurable and stays below it. Default 1
	// (DefaultSearchRetries); negative means none.
	Retries int
	// Lengthen is how many times a level too short to decide (see
	// VerdictTooShort) is run again with more requests before the search
	// gives up on it. Default DefaultSearchLengthen (2); negative means none.
	Lengthen int
	// MinRate ends the downward search when even this rate fails. Default
	// Start/64.
	MinRate float64
	// MaxRate ends the upward search when this rate passes. Default 1e6.
	MaxRate float64
	// Ratio is the goodput/offered ratio a passing level must reach.
	// Default DefaultGoodputRatio.
	Ratio float64
	// Repeats is how many valid runs, each with arrivals and prompts of its
	// own, the two levels that bracket a found knee get: the knee level
	// (its passing run and its confirmation count) and the first failing
	// level above it (--knee-repeats). The extra runs come after the
	// confirmation, within MaxSteps, and do not move the knee: they back
	// its interval (KneeInterval.Repeats). Default DefaultKneeRepeats (2:
	// one more run of the failing level); 1 adds none.
	Repeats int
	// Capacity is the throughput probe's capacity estimate in req/s (0:
	// none); a search that ends below a level the client could not drive
	// sizes its shard advice (KneeBoundDetail.Shards) from it.
	Capacity float64
}

// DefaultSearchRetries is SearchOptions.Retries' default.
const DefaultSearchRetries = 1

// DefaultKneeRepeats is SearchOptions.Repeats' default (--knee-repeats).
const DefaultKneeRepeats = 2

// DefaultSearchLengthen is SearchOptions.Lengthen's default.
const DefaultSearchLengthen = 2

// maxLengthenFactor bounds one longer rerun to this many times the requests
// of the run before it.
const maxLengthenFactor = 16

func (o SearchOptions) withDefaults() SearchOptions {
	if o.Start <= 0 {
		o.Start = 1
	}
	if o.Factor <= 1 {
		o.Factor = 2
	}
	if o.Tolerance <= 0 {
		o.Tolerance = DefaultAutoTolerance
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultSearchRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	switch {
	case o.Lengthen == 0:
		o.Lengthen = DefaultSearchLengthen
	case o.Lengthen < 0:
		o.Lengthen = 0
	}
	if o.MinRate <= 0 {
		o.MinRate = o.Start / 64
	}
	if o.MaxRate <= 0 {
		o.MaxRate = 1e6
	}
	if o.Ratio <= 0 {
		o.Ratio = DefaultGoodputRatio
	}
	if o.Repeats <= 0 {
		o.Repeats = DefaultKneeRepeats
	}
	return o
}

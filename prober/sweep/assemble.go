package sweep

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
)

// result assembles result.json from the steps run.
func (r *runner) result(complete bool) *Result {
	c := r.cfg
	res := &Result{
		Date:        r.fp.Start.Format("20060102-150405"),
		Backend:     "openai",
		ModelID:     r.model,
		TokenizerID: r.fp.Target.Root,
		Metadata:    c.Metadata,
		Mode:        c.Mode(),
		Arrival:     c.Arrival,
		Burstiness:  c.Burstiness,
		Rates:       c.RatesText,
		SLO:         sloMillis(c),
		Percentiles: c.Percentiles,
		Steps:       r.steps,
		KneeUnit:    "req/s",
		Complete:    complete,
		Name:        c.Name,
		Rounds:      c.Rounds,
	}
	if b := c.api().BenchBackends; len(b) > 0 {
		res.Backend = b[0]
	}
	if res.TokenizerID == fingerprint.NotRecorded {
		res.TokenizerID = r.model
	}
	res.MetadataOrder = slices.Sorted(maps.Keys(c.Metadata))
	if len(c.Concurrency) > 0 {
		res.KneeUnit, res.Rates = "concurrency", ""
	}
	var outcomes []StepOutcome
	for _, lv := range r.levels {
		var rounds []*Step
		for _, s := range r.steps {
			// A ladder's reruns of the knee's bracket (repeatLadderBrackets)
			// back its interval, not the level's figures; a search's
			// verdicts decide its knee below.
			if s.Level == lv && (r.search != nil || !s.isRepeat()) {
				rounds = append(rounds, s)
			}
		}
		if len(rounds) == 0 {
			continue
		}
		l := aggregate(r.levelLabel(lv), lv, r.stepMode(lv), rounds, DefaultGoodputRatio)
		res.Levels = append(res.Levels, l)
		outcomes = append(outcomes, l.Outcome)
	}
	slices.SortStableFunc(res.Levels, func(a, b Level) int { return cmp.Compare(a.Level, b.Level) })
	res.Knee = LadderKnee(outcomes, DefaultGoodputRatio)
	res.Probe = r.probe
	res.Dataset = r.datasetInfo
	if r.dataset == nil {
		res.PromptNonce = r.cfg.PromptNonce
	}
	if c.Mode() != ModeClosed {
		res.ReferenceCapacity = c.ReferenceCapacity
		res.MaxConcurrency = c.MaxConcurrency
	}
	if r.search != nil {
		// The search decided the knee run by run (longer reruns and the
		// confirmation are not rounds to average): its knee and its
		// verdicts stand.
		res.Knee = r.search.Knee
		res.Knee.Stop = r.search.Stop
		res.SearchEnd = r.search.End
		for i := range res.Levels {
			res.Levels[i].Passes = searchPasses(res.Steps, res.Levels[i].Level)
		}
	}
	res.CostPerHour = c.CostPerHour
	res.Knee.Interval = r.kneeInterval(res)
	if c.Background() {
		res.SweepMode = SweepBackground
		res.Background = backgroundKnee(&c, res.Steps, res.Knee)
		res.Notes = append(res.Notes, backgroundNote(res.Background, res.Steps))
	}
	res.Notes = append(res.Notes, r.resultNotes(complete)...)
	return res
}

// searchPasses reports whether the search let level pass: some run of it
// passed and none failed (a failed confirmation included).
func searchPasses(steps []*Step, level float64) bool {
	pass := false
	for _, st := range steps {
		if st.Level != level || st.Search == nil {
			continue
		}
		switch st.Search.Verdict {
		case VerdictPass, VerdictConfirmed:
			pass = true
		case VerdictFail, VerdictUnconfirmed:
			return false
		case VerdictRepeat:
			if !strings.HasPrefix(st.Search.Why, "repeat: pass") {
				return false
			}
		}
	}
	return pass
}

// probeNote describes the throughput probe in one sentence.
func (r *runner) probeNote() string {
	p := r.probe
	if p.EstimateReqPerS <= 0 {
		return fmt.Sprintf("the throughput probe gave no estimate (%s); the search started at %s req/s.", p.Note, fmtLevel(p.StartRate))
	}
	start := "the search started there"
	if p.StartRate < roundRate(p.EstimateReqPerS) {
		start = fmt.Sprintf("the client drove %s req/s without a flag of its own (client-read-lag, client-saturated), so the search started there, below the estimate,",
			fmtLevel(p.StartRate))
	}
	return fmt.Sprintf("before the search, a closed-loop throughput probe (concurrency %s, %s each) estimated the capacity at %s req/s (%s); %s and stepped by a factor sqrt 2 to bracket the knee.",
		probeLevelsText(p.Levels), ProbeDuration, fmtLevel(roundRate(p.EstimateReqPerS)), p.Note, start)
}

func probeLevelsText(ls []ProbeLevel) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, strconv.Itoa(l.Concurrency))
	}
	return strings.Join(parts, ", ")
}

// resultNotes are the result's notes for the reader: what goodput and
// keep-up are, a shard's knee, a burst, the embedded simulator, what
// /metrics gave, the engine's and the steps' notes, the probe and an early
// end of the search.
func (r *runner) resultNotes(complete bool) []string {
	c := r.cfg
	var notes []string
	if len(c.Concurrency) == 0 {
		notes = append(notes, "goodput is vllm bench serve's request_goodput: good requests per second of the step's duration, "+
			"drain included, so it never exceeds what the server served. keep-up % is the knee's criterion (result.json goodput_ratio, "+
			"capped at 100 % for display): the fraction of the step's requests that were good, times its arrival window over the time "+
			"the server needed to finish them less one unloaded request latency; a level keeps up at 90 % or more.")
	}
	if c.Sharded() {
		notes = append(notes, fmt.Sprintf("shard %d of %d: this shard sent each level at rate/%d, and its knee judges that share "+
			"(its goodput and served throughput against rate/%d) while the server carried every shard's load; the sweep's knee, over "+
			"every shard's records, is `llmprobe merge`'s.", c.ShardIndex, c.ShardCount, c.ShardCount, c.ShardCount))
	}
	if c.HasBurst() {
		notes = append(notes, "rate inf is a burst, not an open loop: every request of the step was sent at once, so its latencies include queueing behind the whole burst; it is not used for the knee.")
	}
	if c.Embedded {
		notes = append(notes, "target: the built-in vLLM simulator, started in-process (no --target); the client CPU check is skipped because the simulator shares the process.")
	}
	if !r.metricsOK {
		notes = append(notes, "the server's /metrics could not be read ("+r.metricsReason+"): snapshots, idle proofs and server-side figures are not-recorded.")
	} else if !r.idleKnown {
		notes = append(notes, r.idleReason+": idle proofs are not-recorded.")
	}
	notes = append(append(notes, r.engineNotes()...), r.stepNotes...)
	if r.probe != nil {
		notes = append(notes, r.probeNote())
	}
	if r.search != nil && complete {
		switch r.search.End {
		case SearchMaxSteps, SearchInvalid:
			notes = append(notes, "the adaptive search stopped early: "+r.search.Stop+".")
		}
	}
	return notes
}

package sweep

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// Merger combines the results of the shards of one sharded sweep (Config
// ShardIndex/ShardCount) into one result: NewMerger checks that the shards
// ran the same experiment (their fingerprints match in all but the shard,
// the client host, the command line and the times) and the same steps; Add
// takes every shard's records; Result recomputes each step's statistics
// from the records (exact, unlike merging histograms or summaries), judges
// its validity again and recomputes the levels and the knee.
type Merger struct {
	shards []*Result
	steps  []*mergeStep
	used   bool
}

type mergeStep struct {
	st  *Step // the merged step (a copy of shard 0's, stats to recompute)
	acc *StatsAccumulator
	n   int64
	cpu float64
	// sched is the worst scheduling latency of the shards' steps.
	sched schedFigure
}

// NewMerger checks shards (each a Result with its Fingerprint, as
// report.Load reads a run directory) and returns a Merger for them. Every
// shard of the sweep must be given, each once.
func NewMerger(shards []*Result) (*Merger, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: no shard results")
	}
	first := shards[0].Fingerprint.Load.Shard
	if first == nil {
		return nil, fmt.Errorf("merge: shard 0: not a sharded run (no load.shard in the fingerprint)")
	}
	seen := make([]bool, first.Count)
	if len(shards) != first.Count {
		return nil, fmt.Errorf("merge: %d run directories for a sweep of %d shards", len(shards), first.Count)
	}
	key0, err := sameExperiment(shards[0].Fingerprint)
	if err != nil {
		return nil, err
	}
	for i, r := range shards {
		sh := r.Fingerprint.Load.Shard
		if sh == nil || sh.Count != first.Count || sh.Index < 0 || sh.Index >= sh.Count {
			return nil, fmt.Errorf("merge: run %d: not a shard of the same %d-shard sweep", i, first.Count)
		}
		if seen[sh.Index] {
			return nil, fmt.Errorf("merge: shard %d given twice", sh.Index)
		}
		seen[sh.Index] = true
		key, err := sameExperiment(r.Fingerprint)
		if err != nil {
			return nil, err
		}
		if key != key0 {
			return nil, fmt.Errorf("merge: shard %d's fingerprint differs from shard %d's (target, workload, load settings or build): not the same experiment", sh.Index, first.Index)
		}
		if len(r.Steps) != len(shards[0].Steps) {
			return nil, fmt.Errorf("merge: shard %d ran %d steps, shard %d ran %d", sh.Index, len(r.Steps), first.Index, len(shards[0].Steps))
		}
		for j, st := range r.Steps {
			s0 := shards[0].Steps[j]
			if st.Label != s0.Label || st.Index != s0.Index {
				return nil, fmt.Errorf("merge: step %d is %q in shard %d but %q in shard %d", j, st.Label, sh.Index, s0.Label, first.Index)
			}
		}
	}
	m := &Merger{shards: shards}
	r0 := shards[0]
	so := slo.SLO{TTFT: msDur(r0.SLO["ttft"]), TPOT: msDur(r0.SLO["tpot"]), E2EL: msDur(r0.SLO["e2el"])}
	for j, s0 := range r0.Steps {
		st := *s0
		st.Stats, st.Warmups, st.WarmupFailed, st.DistinctPrompts = Stats{}, 0, 0, 0
		requested := 0.0
		cpu := -1.0
		var sched schedFigure
		for _, r := range shards {
			s := r.Steps[j]
			if s.Start.Before(st.Start) {
				st.Start = s.Start
			}
			if s.End.After(st.End) {
				st.End = s.End
			}
			st.Warmups += s.Warmups
			st.WarmupFailed += s.WarmupFailed
			st.DistinctPrompts += s.DistinctPrompts
			st.Interrupted = st.Interrupted || s.Interrupted
			requested += s.Stats.RequestedRate
			cpu = max(cpu, s.Validity.ClientCPU)
			if s.Validity.SchedLatencyP99MS >= sched.p99MS {
				sched = schedFigure{p99MS: s.Validity.SchedLatencyP99MS, samples: s.Validity.SchedLatencySamples,
					overLimit: s.Validity.SchedLatencyOverLimit}
			}
		}
		acc := NewStatsAccumulator(StatsOptions{
			SLO: so, Percentiles: r0.Percentiles, RequestedRate: requested,
			Seed: attemptSeed(r0.Fingerprint.Load.Seed, st.Level, st.Round, st.Attempt), Start: st.Start,
		})
		m.steps = append(m.steps, &mergeStep{st: &st, acc: acc, cpu: cpu, sched: sched})
	}
	return m, nil
}

// Add adds one record of a step (the step's index in run order, as
// records.jsonl's "step"). Records of a step get arrival indexes in the
// order they are added.
func (m *Merger) Add(step int, r *prober.Record) error {
	if step < 0 || step >= len(m.steps) {
		return fmt.Errorf("merge: record of step %d: the shards ran %d steps", step, len(m.steps))
	}
	ms := m.steps[step]
	ms.acc.Add(ms.n, r)
	ms.n++
	return nil
}

// Result returns the merged result; call it once, after the last Add.
func (m *Merger) Result() *Result {
	if m.used {
		panic("sweep: Merger.Result called twice")
	}
	m.used = true
	r0 := m.shards[0]
	res := *r0
	res.Steps, res.Levels, res.Notes = nil, nil, nil
	fp := r0.Fingerprint
	fp.Load.Shard = nil
	fp.Steps = nil
	vo := ValidityOptions{}
	if v := fp.Load.Validity; v != nil {
		vo = ValidityOptions{MaxSendLag: msDur(v.MaxSendLagMS), MaxClientCPU: v.MaxClientCPU, MaxErrorRate: v.MaxErrorRate,
			MaxSchedLatency: msDur(v.MaxSchedLatencyMS)}
		if !v.CPUChecked {
			vo.MaxClientCPU = -1
		}
	}
	complete := true
	res.Answers = nil
	for _, r := range m.shards {
		complete = complete && r.Complete
		if r.Fingerprint.Load.Shard.Index == 0 {
			res.Answers = r.Answers // only shard 0 sends the answer checks
		}
		if r.Fingerprint.Start.Before(fp.Start) {
			fp.Start = r.Fingerprint.Start
		}
		if r.Fingerprint.End.After(fp.End) {
			fp.End = r.Fingerprint.End
		}
	}
	for _, ms := range m.steps {
		st := ms.st
		st.Stats = ms.acc.Stats(st.End.Sub(st.Start))
		st.Stats.schedLat = ms.sched
		st.Validity = Judge(st.Stats, ms.cpu, st.Validity.Idle, st.Interrupted, vo)
		res.Steps = append(res.Steps, st)
		fp.Steps = append(fp.Steps, fingerprint.StepWindow{Index: st.Index, Label: st.Label, Start: st.Start, End: st.End, Requests: st.Stats.Requests})
	}
	var levels []float64
	for _, st := range res.Steps {
		if !slices.Contains(levels, st.Level) {
			levels = append(levels, st.Level)
		}
	}
	slices.Sort(levels)
	var outcomes []StepOutcome
	for _, lv := range levels {
		var rounds []*Step
		mode := ""
		for _, s := range res.Steps {
			if s.Level == lv {
				rounds = append(rounds, s)
				mode = s.Mode
			}
		}
		// A sharded sweep runs rates only (validateShard): levels are rates.
		l := aggregate("rate="+fmtLevel(lv), lv, mode, rounds, DefaultGoodputRatio)
		res.Levels = append(res.Levels, l)
		outcomes = append(outcomes, l.Outcome)
	}
	res.Knee = LadderKnee(outcomes, DefaultGoodputRatio)
	res.Complete = complete
	res.Fingerprint = fp
	res.Notes = append(res.Notes, fmt.Sprintf("merged from %d shards (llmprobe merge): each sent every rate divided by %d with its own seed; "+
		"the statistics are recomputed from the union of their records, the server-side figures are shard 0's (each shard read the whole server).",
		len(m.shards), len(m.shards)))
	res.Notes = append(res.Notes, r0.Notes...)
	return &res
}

// sameExperiment is the fingerprint's identity for a merge: its JSON with
// what differs between the shards of one sweep cleared.
func sameExperiment(fp fingerprint.Fingerprint) (string, error) {
	fp.Load.Shard = nil
	fp.Command, fp.Client, fp.Steps = nil, fingerprint.Host{}, nil
	fp.Start, fp.End = time.Time{}, time.Time{}
	b, err := json.Marshal(fp)
	if err != nil {
		return "", fmt.Errorf("merge: fingerprint: %w", err)
	}
	return string(b), nil
}

func msDur(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

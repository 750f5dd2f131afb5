package rundir

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestShardedSweepMerge runs a sweep as 4 shards (concurrent in-process
// runs, aligned on one --start-at) against one simulator, merges their run
// directories and checks that the merged statistics are those of the union
// of the shards' records and that the shards together sent the requested
// rate.
func TestShardedSweepMerge(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	const shards, rate, total = 4, 200.0, 400
	start := time.Now().Add(2 * time.Second)
	dirs := make([]string, shards)
	var wg sync.WaitGroup
	errs := make([]error, shards)
	for k := range shards {
		cfg := testConfig(t, url)
		cfg.Rates, cfg.RatesText = []float64{rate}, "200"
		cfg.NumPrompts, cfg.Warmups = total, 0
		cfg.Seed = 7
		cfg.ShardIndex, cfg.ShardCount = k, shards
		cfg.StartAt = start
		cfg.Name = "shard"
		cfg.AnswerChecks = answer.Builtin() // sent by shard 0 alone
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := Run(context.Background(), cfg, testOptions(t))
			if err == nil && !out.Complete {
				err = os.ErrInvalid
			}
			if out != nil {
				dirs[k] = out.Dir
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", k, err)
		}
	}
	seeds := map[int64]bool{}
	for k, d := range dirs {
		r, err := report.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		sh := r.Fingerprint.Load.Shard
		if sh == nil || sh.Index != k || sh.Count != shards {
			t.Fatalf("shard %d: fingerprint shard %+v", k, sh)
		}
		seeds[sh.Seed] = true
		if got := r.Steps[0].Stats.Requests; got != total/shards {
			t.Errorf("shard %d sent %d requests, want %d", k, got, total/shards)
		}
		if got := r.Steps[0].Stats.RequestedRate; got != rate/shards {
			t.Errorf("shard %d requested rate %v, want %v", k, got, rate/shards)
		}
		if (r.Answers != nil) != (k == 0) {
			t.Errorf("shard %d: answers %+v; want them from shard 0 only", k, r.Answers)
		}
	}
	if len(seeds) != shards {
		t.Errorf("shard seeds not distinct: %v", seeds)
	}

	outDir := t.TempDir()
	out, err := Merge(dirs, MergeOptions{OutDir: outDir, Args: []string{"llmprobe", "merge"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := artifacts.Verify(out.Dir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) > 0 {
		t.Fatalf("merged run does not verify: %v %v", err, v.Problems)
	}
	merged, err := report.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Fingerprint.Load.Shard != nil || !merged.Complete {
		t.Errorf("merged run: shard %+v, complete %v", merged.Fingerprint.Load.Shard, merged.Complete)
	}
	st := out.Result.Steps[0]

	// The union of the shards' records, computed over directly.
	acc := sweep.NewStatsAccumulator(sweep.StatsOptions{RequestedRate: rate, Start: st.Start})
	n := int64(0)
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, artifacts.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			l := artifacts.RecordLine{Record: &prober.Record{}}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			acc.Add(n, l.Record)
			n++
		}
		f.Close()
	}
	want := acc.Stats(st.End.Sub(st.Start))
	got := st.Stats
	if got.Requests != total || want.Requests != total {
		t.Fatalf("merged %d requests, union %d, want %d", got.Requests, want.Requests, total)
	}
	for name, pair := range map[string][2]sweep.Latency{
		"ttft": {got.TTFT, want.TTFT}, "tpot": {got.TPOT, want.TPOT}, "itl": {got.ITL, want.ITL}, "e2el": {got.E2EL, want.E2EL},
		"send_lag": {got.SendLag, want.SendLag},
	} {
		if !reflect.DeepEqual(pair[0].Summary, pair[1].Summary) {
			t.Errorf("%s: merged %+v, union %+v", name, pair[0].Summary, pair[1].Summary)
		}
	}
	if got.Completed != want.Completed || got.Good != want.Good || got.TotalOutputTokens != want.TotalOutputTokens ||
		got.RequestThroughput != want.RequestThroughput || got.AchievedRate != want.AchievedRate || got.GoodputRatio != want.GoodputRatio {
		t.Errorf("merged stats differ from the union's:\n got %+v\nwant %+v", got, want)
	}
	// The shards together send the whole rate. The bound is loose: on a
	// busy machine late sends stretch a 2-second window (the exact checks
	// are the merged-equals-union ones above); on one too busy for the
	// clients to keep the rate at all, the merged step is flagged
	// client-saturated with its evidence, the right answer there.
	if math.Abs(got.AchievedRate-rate)/rate > 0.10 && !clientSaturated(t, out, st) {
		t.Errorf("achieved total rate %.2f req/s, want %v within 10 %%", got.AchievedRate, rate)
	}
	if got.RequestedRate != rate {
		t.Errorf("merged requested rate %v, want %v", got.RequestedRate, rate)
	}
	if len(merged.Levels) != 1 || !strings.Contains(strings.Join(merged.Notes, " "), "merged from 4 shards") {
		t.Errorf("merged levels %d, notes %q", len(merged.Levels), merged.Notes)
	}
	// The merge keeps shard 0's answer checks, in whatever order the
	// shards are given.
	if a := merged.Answers; a == nil || a.Checks != len(answer.Builtin().Items) || a.Pass != a.Checks {
		t.Errorf("merged answers %+v, want shard 0's", a)
	}
	rev := []string{dirs[3], dirs[2], dirs[1], dirs[0]}
	if out, err := Merge(rev, MergeOptions{OutDir: t.TempDir(), Args: []string{"llmprobe", "merge"}}); err != nil {
		t.Error(err)
	} else if out.Result.Answers == nil || out.Result.Answers.Checks != merged.Answers.Checks {
		t.Errorf("merged from shard 3 first: answers %+v, want shard 0's", out.Result.Answers)
	}
	t.Logf("achieved %.2f req/s of %v; p99 ttft %.2f ms", got.AchievedRate, rate, got.TTFT.P99)
}

// TestMergeRejectsMismatch: shards of different experiments do not merge.
func TestMergeRejectsMismatch(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	var dirs []string
	for k, seed := range []int64{1, 2} {
		cfg := testConfig(t, url)
		cfg.Rates, cfg.RatesText = []float64{40}, "40"
		cfg.NumPrompts, cfg.Warmups, cfg.Seed = 4, 0, seed
		cfg.ShardIndex, cfg.ShardCount = k, 2
		out := mustRun(t, cfg, testOptions(t))
		dirs = append(dirs, out.Dir)
	}
	if _, err := Merge(dirs, MergeOptions{OutDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "not the same experiment") {
		t.Fatalf("merge of different seeds: err %v", err)
	}
	if _, err := Merge(dirs[:1], MergeOptions{OutDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "2 shards") {
		t.Fatalf("merge of one of two shards: err %v", err)
	}
}

// twoShards runs a 2-shard sweep (4 requests at 40 req/s, one shard after
// the other) and returns the shards' run directories.
func twoShards(t *testing.T) []string {
	t.Helper()
	url, _ := simtest.Start(t, simtest.Fast())
	var dirs []string
	for k := range 2 {
		cfg := testConfig(t, url)
		cfg.Rates, cfg.RatesText = []float64{40}, "40"
		cfg.NumPrompts, cfg.Warmups, cfg.Seed = 4, 0, 3
		cfg.ShardIndex, cfg.ShardCount = k, 2
		out := mustRun(t, cfg, testOptions(t))
		dirs = append(dirs, out.Dir)
	}
	return dirs
}

// appendShardRecords appends the records of shard from to shard to's
// records.jsonl (the tampering of issue 22 D5) and, with rehash, also
// updates shard to's manifest entry so that the shard verifies again.
func appendShardRecords(t *testing.T, from, to string, rehash bool) {
	t.Helper()
	extra := mustRead(t, filepath.Join(from, artifacts.RecordsFile))
	p := filepath.Join(to, artifacts.RecordsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, extra...)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if !rehash {
		return
	}
	m, err := artifacts.ReadManifest(to)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	for i := range m.Files {
		if m.Files[i].Path == artifacts.RecordsFile {
			m.Files[i].SHA256, m.Files[i].Bytes = hex.EncodeToString(sum[:]), int64(len(b))
		}
	}
	mb, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, artifacts.ManifestFile), mb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMergeRefusesTamperedShard is issue 22 D5: a shard whose records.jsonl
// no longer matches its manifest merged with exit 0 into a run with
// duplicate request_ids and a fresh manifest that passed verify. Merge now
// refuses it before writing anything, naming the shard and the file; a
// shard re-hashed to match (so it verifies) is still refused for its
// duplicate request_ids.
func TestMergeRefusesTamperedShard(t *testing.T) {
	dirs := twoShards(t)
	appendShardRecords(t, dirs[0], dirs[1], false)
	outDir := t.TempDir()
	out, err := Merge(dirs, MergeOptions{OutDir: outDir})
	if err == nil || out != nil {
		t.Fatalf("merge of a tampered shard: out %+v, err %v", out, err)
	}
	for _, want := range []string{"shard 1", dirs[1], "does not match its manifest", "changed: " + artifacts.RecordsFile} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Errorf("a refused merge wrote %d entries", len(ents))
	}

	appendShardRecords(t, dirs[0], dirs[1], true)
	if v, err := artifacts.Verify(dirs[1], artifacts.VerifyOptions{}); err != nil || len(v.Problems) > 0 {
		t.Fatalf("re-hashed shard does not verify: %v %v", err, v.Problems)
	}
	_, err = Merge(dirs, MergeOptions{OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "appears twice (first in shard 0)") || !strings.Contains(err.Error(), "shard 1") {
		t.Fatalf("merge of overlapping shards: err %v", err)
	}
}

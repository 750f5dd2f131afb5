package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// promptItem is one request of the workload.
type promptItem = workload.Item

// promptSource builds the prompts of every step from one workload
// generator (so the shared prefix is the same across steps unless
// --fresh-prefix), sized with the server's /tokenize or, without it, a
// calibration from usage.prompt_tokens.
type promptSource struct {
	gen   *workload.Generator
	tok   workload.Tokenizer
	fresh bool
}

// calibrationWords are the prompt lengths (words) of the calibration
// requests sent when the server has no /tokenize.
var calibrationWords = []int{32, workload.DefaultCalibrationWords}

func newPromptSource(ctx context.Context, r *runner) (*promptSource, error) {
	c := r.cfg
	gen, err := workload.NewGenerator(c.Workload, uint64(c.Seed))
	if err != nil {
		return nil, err
	}
	st, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{
		BaseURL: c.Target, Model: r.model, Chat: c.API == "chat",
		Client: &http.Client{Timeout: 30 * time.Second, Transport: r.http.Transport}, Header: r.authHeader(),
	})
	if err != nil {
		return nil, err
	}
	ps := &promptSource{gen: gen, tok: st, fresh: c.FreshPrefix}
	_, err = st.Count(ctx, "the")
	switch {
	case err == nil:
	case errors.Is(err, workload.ErrTokenizeUnsupported):
		cal, cerr := r.calibrate(ctx)
		if cerr != nil {
			return nil, fmt.Errorf("the server has no /tokenize and calibrating from usage.prompt_tokens failed: %w", cerr)
		}
		ps.tok = cal
	default:
		return nil, err
	}
	r.tokenizer = workload.Method(ps.tok)
	return ps, nil
}

// calibrate sends one short request per calibration length and fits the
// tokens-per-word estimate to the server's usage.prompt_tokens.
func (r *runner) calibrate(ctx context.Context) (*workload.Calibrated, error) {
	var obs []workload.Observation
	for i, n := range calibrationWords {
		text := workload.CalibrationText(n)
		rec := prober.Record{}
		req := r.request(fmt.Sprintf("llmprobe-%s-calibrate-%d", r.runID, i), promptItem{Prompt: text, OutputTokens: 1})
		r.client.Do(ctx, req, &rec)
		if !rec.OK() {
			return nil, fmt.Errorf("calibration request: %s: %s", rec.Error, rec.ErrorMessage)
		}
		if rec.PromptTokens <= 0 {
			return nil, errors.New("the server reports no usage.prompt_tokens")
		}
		obs = append(obs, workload.Observation{Text: text, PromptTokens: rec.PromptTokens})
	}
	return workload.Calibrate(obs...)
}

// stepItems are the prompts of one step: the warmups and the measured ones.
type stepItems struct {
	warmups  []promptItem
	measured *itemList
}

// itemList yields the measured items of a step by arrival index: built in
// advance when the count is known, else on demand (cheap once the
// generator has cached the base prompt of each length).
type itemList struct {
	ps   *promptSource
	base int64
	pre  []promptItem
}

func (l *itemList) get(ctx context.Context, i int) (promptItem, error) {
	if i < len(l.pre) {
		return l.pre[i], nil
	}
	return l.ps.gen.At(ctx, l.ps.tok, l.base+int64(i))
}

// items builds a step's items. Item indices come from the step seed, so a
// level's prompts do not depend on the order the levels ran in, and no two
// steps share a prompt beyond the shared prefix. With --fresh-prefix each
// step draws a new prefix first. n < 0 means the count is not known.
func (ps *promptSource) items(ctx context.Context, seed uint64, n, warmups int) (stepItems, error) {
	if ps.fresh {
		ps.gen.FreshPrefix()
	}
	base := int64(seed >> 24)        // 40 bits: room for any step's count
	wbase := int64(seed>>24) ^ 1<<40 // warmups: a disjoint range
	out := stepItems{measured: &itemList{ps: ps, base: base}}
	for i := range warmups {
		it, err := ps.gen.At(ctx, ps.tok, wbase+int64(i))
		if err != nil {
			return out, err
		}
		out.warmups = append(out.warmups, it)
	}
	if n > 0 {
		out.measured.pre = make([]promptItem, 0, n)
		for i := range n {
			it, err := ps.gen.At(ctx, ps.tok, base+int64(i))
			if err != nil {
				return out, err
			}
			out.measured.pre = append(out.measured.pre, it)
		}
	}
	return out, nil
}

// prefixGeneration is the number of prefixes drawn so far (0 without
// --fresh-prefix).
func (ps *promptSource) prefixGeneration() uint64 { return ps.gen.Info().PrefixGeneration }

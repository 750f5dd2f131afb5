package answer

import (
	"context"
	"strconv"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
)

// Doer sends one request and measures it into rec: a *client.Client of the
// target's request path (sweep.Prepared.CheckClient).
type Doer interface {
	Do(ctx context.Context, req client.Request, rec *prober.Record)
}

// SendOptions are the settings of Send.
type SendOptions struct {
	// API is the target's API (a generating row of client's API table):
	// how each check's request is built.
	API string
	// Model is written into each request's Record.
	Model string
	// Redact is applied to every reply and reason (Evaluate's redact; nil:
	// none).
	Redact func(string) string
	// IDPrefix starts every request id: the n-th send's is IDPrefix
	// followed by n, from 1 ("llmprobe-compare-baseline-check-" gives
	// "llmprobe-compare-baseline-check-1").
	IDPrefix string
	// Repeats sends the whole set that many times, in order (0: once).
	Repeats int
	// TopLogprobs asks every check for that many log-probabilities per
	// token (RequestOptions.TopLogprobs; 0: none). When the first send fails
	// with them asked and succeeds without, every send goes without them
	// and Send reports it.
	TopLogprobs int
}

// Send sends every item of set through d, one after another and in order,
// the whole set o.Repeats times, and judges each reply (Evaluate). It
// returns one Result per send, in send order, and whether the server
// refused the log-probabilities (o.TopLogprobs > 0: the first check erred
// with them and passed or failed without; the sends then went without).
// When ctx ends, Send stops and returns ctx's error and no results: a check
// cut short says nothing about the answers.
func Send(ctx context.Context, d Doer, set *Set, o SendOptions) (results []Result, logprobsRefused bool, err error) {
	reps := max(o.Repeats, 1)
	top := o.TopLogprobs
	out := make([]Result, 0, reps*len(set.Items))
	for n := range reps * len(set.Items) {
		it := set.Items[n%len(set.Items)]
		id := o.IDPrefix + strconv.Itoa(n+1)
		send := func(top int) Result {
			req, err := it.Request(o.API, id, RequestOptions{TopLogprobs: top})
			if err != nil {
				return Result{Check: it.ID, Kind: it.Kind, Outcome: Error, RequestID: id, Reason: err.Error()}
			}
			rec := &prober.Record{RequestID: id, Scheduled: time.Now(), Model: o.Model}
			d.Do(ctx, req, rec)
			return Evaluate(it, &req, rec, o.Redact)
		}
		r := send(top)
		if n == 0 && top > 0 && r.Outcome == Error && ctx.Err() == nil {
			if again := send(0); again.Outcome != Error {
				top, r, logprobsRefused = 0, again, true
			}
		}
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		out = append(out, r)
	}
	return out, logprobsRefused, nil
}

// Tally counts results by outcome.
type Tally struct {
	Pass, Fail, Error int
}

// Count tallies results by outcome.
func Count(results []Result) Tally {
	var t Tally
	for _, r := range results {
		switch r.Outcome {
		case Pass:
			t.Pass++
		case Fail:
			t.Fail++
		default:
			t.Error++
		}
	}
	return t
}

// PassRatio is the share of the judged results (pass and fail; an error is
// no evidence about the answers) that passed, as the daemon's pass-ratio
// rules count it; ok is false when none was judged.
func (t Tally) PassRatio() (ratio float64, ok bool) {
	if n := t.Pass + t.Fail; n > 0 {
		return float64(t.Pass) / float64(n), true
	}
	return 0, false
}

package manager

import (
	"context"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// A probe's lora request features name adapters that the target may not
// serve (yet, or any more). A draw naming an adapter that the target's last
// discovery (/v1/models, refreshed as always: at start, then every 5
// minutes) did not list sends nothing: its Record is NotSent with the class
// and message of a configured model that is not listed
// (endpoint.ErrModelNotListed, invalid_response), so the problem shows in
// llmprobe_requests_total by class without loading the server with
// requests it would answer 404. Once a later discovery lists the adapter,
// its draws are sent again. An unknown or empty list checks nothing.

// adapterNotListed returns the error of a draw whose adapter the target's
// last discovery did not list; nil when it names none, or the list holds it
// or is not known.
func (t *targetRunner) adapterNotListed(d workload.RequestDraw) *endpoint.Error {
	if d.Model == "" {
		return nil
	}
	t.infoMu.Lock()
	models := t.info.Models
	t.infoMu.Unlock()
	return t.ep.NotListed(d.Model, models)
}

// failUnlisted finishes rec, the arrival of draw d, as not sent because of
// err (adapterNotListed): the Record names the adapter and the features
// drawn, as a sent one would.
func (p *probeRunner) failUnlisted(ctx context.Context, rec *prober.Record, d workload.RequestDraw, err *endpoint.Error) {
	rec.Model, rec.Features = d.Model, d.Names
	p.fail(ctx, rec, err.Class, err.Msg)
}

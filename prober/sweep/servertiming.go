package sweep

// serverTimingReason says why a step's requests carried no per-request
// server timing: what the endpoint did not ask, else that the server did
// not answer what it was asked.
func (r *runner) serverTimingReason() string {
	if r.ep == nil {
		return "no endpoint"
	}
	if asked, why := r.ep.ServerTimingAsked(); !asked {
		return why
	}
	return "no successful streamed response carried vLLM's metrics object (start vLLM with --enable-per-request-metrics)"
}

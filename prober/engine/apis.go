package engine

// unserved holds, per engine, the APIs (names of prober/client's API
// table) that the engine's own source shows it does not serve, each with
// the reason a probe or sweep reports instead of the server's bare 404.
// An engine or API not listed is not known not to serve it (docs/engines.md
// "Which engines serve which API").
var unserved = map[Name]map[string]string{
	TGI: {
		"messages": "TGI serves no Anthropic Messages API: its router registers no /v1/messages " +
			"(huggingface/text-generation-inference router/src/server.rs @ db931fcf; docs/engines.md)",
	},
}

// Unserved returns why the engine does not serve api ("" when it does, or
// is not known not to).
func (e *Engine) Unserved(api string) string {
	return unserved[e.name][api]
}

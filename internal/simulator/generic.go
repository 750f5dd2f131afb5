package simulator

import "net/http"

// The generic persona (EngineGeneric, `--engine generic`): an
// OpenAI-compatible server of no engine llmprobe knows, as a gateway or a
// small home-grown server is. It serves vLLM's API, stream and POST
// /tokenize, GET /version {"version"} and /health, lists its model with
// owned_by "system" and no max_model_len, has no /metrics, and its router
// answers every other GET with its version — so GET /api/version, Ollama's
// version endpoint, answers in Ollama's shape too. That is the server of
// issue 22 V4, which engine detection took for Ollama (and then sized no
// prompt with the /tokenize it had).

// versionEverywhere answers every GET that matches no route with the
// version, as a catch-all route does; other methods get notFound.
func (s *Simulator) versionEverywhere(notFound http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			notFound.ServeHTTP(w, r)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"version": VersionGeneric})
	})
}

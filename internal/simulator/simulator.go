// Package simulator owns llmprobe's built-in vLLM look-alike: an
// OpenAI-compatible HTTP API as vLLM serves it (completions, chat
// completions, SSE streaming, tokenize/detokenize, models, version, health),
// vLLM V1's Prometheus metrics, a real-time continuous-batching engine model
// (waiting queue, max-num-seqs, token budget with chunked prefill, KV blocks
// with preemption, prefix caching) whose capacity is a known formula
// (Config.Capacity), fault injection and a ground-truth trace file. Personas
// (Config.Engine: SGLang, TGI, llama.cpp, Ollama) serve the same engine
// model with another engine's metric names, info and tokenizer endpoints and
// stream quirks.
//
// docs/simulator.md documents the flags, the tokenizer, the engine model, the
// capacity formula and the faults. `llmprobe simulate` serves it; tests use
// the simtest sub-package.
package simulator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
)

// Version is what GET /version answers: the vLLM release whose API and
// metrics the simulator mimics, tagged as the simulator.
const Version = "0.11.0+llmprobe.sim"

// ShutdownGrace is how long Serve waits for in-flight requests after its
// context is canceled before it closes the remaining connections.
const ShutdownGrace = 5 * time.Second

// Simulator is one simulated vLLM server: an engine goroutine, its metrics
// registry and the HTTP handlers. Create it with New, serve Handler (or call
// Serve), and Close it. All methods are safe for concurrent use.
type Simulator struct {
	cfg     Config
	logger  log.Logger
	reg     *prometheus.Registry
	m       *metrics
	eng     *engine
	trace   *traceWriter
	light   *lightState // nil unless cfg.Light.Enabled
	handler http.Handler
	tls     *tls.Config // nil: plain HTTP
	created int64

	faults   atomic.Pointer[Faults]
	reqNo    atomic.Uint64
	idSeed   uint64        // seeds generated request ids: Seed, plus the start time unless DeterministicIDs
	quit     chan struct{} // closed when serving stops: ends hangs and stalls
	done     chan struct{} // closed by Close: ends every handler
	quitMu   sync.Once
	closeMu  sync.Once
	closeErr error
	lora     atomic.Pointer[[]LoRAModule] // cfg.LoRA(), then SetLoRA's (features.go)
	mm       mmCache                      // the multimodal cache (images.go)
}

// New validates cfg, opens the trace file (if any) and starts the engine
// goroutine. The Simulator registers its metrics on a registry of its own.
func New(cfg Config, logger log.Logger) (*Simulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tc, err := cfg.loadTLS()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	start := time.Now()
	s := &Simulator{
		cfg:     cfg,
		logger:  logger,
		reg:     prometheus.NewRegistry(),
		created: start.Unix(),
		idSeed:  uint64(cfg.Seed),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if !cfg.DeterministicIDs {
		s.idSeed = hash2(s.idSeed, uint64(start.UnixNano()))
	}
	if cfg.TraceFile != "" {
		t, err := openTrace(cfg.TraceFile)
		if err != nil {
			return nil, err
		}
		s.trace = t
	}
	f := cfg.Faults
	s.faults.Store(&f)
	lora := cfg.LoRA()
	s.lora.Store(&lora)
	s.m = newMetrics(s.reg, cfg)
	s.eng = newEngine(cfg, s.m)
	if cfg.Light.Enabled {
		s.light = newLightState(cfg.Model, s.created)
	}
	s.tls = tc
	s.handler = s.closeAfterStream(s.gateway(s.routes()))
	s.startBackground()
	return s, nil
}

// Config returns the configuration the Simulator was built with (its Faults
// field is the initial one; see Faults for the current).
func (s *Simulator) Config() Config { return s.cfg }

// Gatherer returns the Simulator's own metrics registry (what /metrics serves).
func (s *Simulator) Gatherer() prometheus.Gatherer { return s.reg }

// Handler returns the whole HTTP API, /metrics included.
func (s *Simulator) Handler() http.Handler { return s.handler }

// SetFaults replaces the fault injection for requests that arrive from now
// on. Probabilities outside [0, 1] act as 0 or 1.
func (s *Simulator) SetFaults(f Faults) { s.faults.Store(&f) }

// Faults returns the current fault injection.
func (s *Simulator) Faults() Faults { return *s.faults.Load() }

// Close ends every in-flight request (streams stop without [DONE]), stops the
// engine goroutine and closes the trace file. It is idempotent.
func (s *Simulator) Close() error {
	s.closeMu.Do(func() {
		s.stopWaiting()
		close(s.done)
		s.eng.close()
		if s.trace != nil {
			s.closeErr = s.trace.close()
		}
	})
	return s.closeErr
}

// stopWaiting ends hangs and stalls (they would otherwise hold a graceful
// shutdown for its whole grace period).
func (s *Simulator) stopWaiting() { s.quitMu.Do(func() { close(s.quit) }) }

// Serve serves the API on l until ctx is canceled, then shuts down
// gracefully: hangs and stalls end at once, other in-flight requests get
// ShutdownGrace to finish. It returns nil after a clean shutdown. Serve does
// not Close the Simulator.
func (s *Simulator) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 30 * time.Second,
		ConnContext:       connContext, // connclose.go
		ErrorLog:          stdlog.New(log.NewStdlibAdapter(level.Debug(s.logger)), "", 0),
	}
	if s.tls != nil {
		l = tls.NewListener(l, s.tls)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve simulator: %w", err)
	case <-ctx.Done():
	}
	level.Info(s.logger).Log("msg", "shutting down simulator", "address", l.Addr().String())
	s.stopWaiting()
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		level.Warn(s.logger).Log("msg", "in-flight requests did not finish in time, closing connections", "err", err)
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve simulator: %w", err)
	}
	return nil
}

// ListenAndServe builds a Simulator from cfg, listens on addr (host:port;
// port 0 picks a free one), logs what it serves and serves until ctx is
// canceled; then it shuts down gracefully and closes the Simulator.
func ListenAndServe(ctx context.Context, cfg Config, addr string, logger log.Logger) error {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	s, err := New(cfg, logger)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errors.Join(fmt.Errorf("listen on %s: %w", addr, err), s.Close())
	}
	s.LogStartup(l.Addr().String())
	err = errors.Join(s.Serve(ctx, l), s.Close())
	if cfg.Light.Enabled {
		st := s.LightStats()
		level.Info(logger).Log("msg", "light mode totals", "requests", st.Requests, "events", st.Events,
			"cpu_seconds", fmt.Sprintf("%.3f", float64(st.CPUNS)/1e9))
	}
	if err == nil {
		level.Info(logger).Log("msg", "simulator stopped")
	}
	return err
}

// LogStartup logs, at info level, the address, model, engine parameters,
// capacity hints and active faults of the Simulator.
func (s *Simulator) LogStartup(addr string) {
	c := s.cfg
	endpoints := map[string]string{
		EngineSGLang:   "/v1/models /v1/completions /v1/chat/completions /v1/messages /tokenize /get_server_info /get_model_info /health /metrics",
		EngineTGI:      "/v1/models /v1/completions /v1/chat/completions /tokenize /chat_tokenize /info /health /metrics",
		EngineLlamaCpp: "/v1/models /v1/completions /v1/chat/completions /v1/messages /tokenize /detokenize /apply-template /props /health /metrics",
		EngineOllama:   "/v1/models /v1/completions /v1/chat/completions /v1/messages /api/version /api/tags /api/show /api/ps",
		EngineGeneric:  "/v1/models /v1/completions /v1/chat/completions /tokenize /detokenize /version /health (every other GET: the version)",
	}[c.Engine]
	if endpoints == "" {
		endpoints = "/v1/models /v1/completions /v1/chat/completions /v1/responses /v1/messages /v1/embeddings /rerank /v1/rerank /score /tokenize /detokenize /version /health /metrics"
	}
	persona := c.Engine
	if persona == "" {
		persona = EngineVLLM
	}
	level.Info(s.logger).Log("msg", "vLLM simulator listening", "persona", persona, "url", s.Scheme()+"://"+addr, "model", c.Model,
		"endpoints", endpoints)
	level.Info(s.logger).Log("msg", "simulator engine",
		"max_num_seqs", c.MaxNumSeqs, "max_num_batched_tokens", c.MaxNumBatchedTokens, "max_model_len", c.MaxModelLen,
		"block_size", c.BlockSize, "num_gpu_blocks", c.NumGPUBlocks, "prefix_caching", c.EnablePrefixCaching,
		"step_base", c.StepBase, "step_per_prefill_token", c.StepPerPrefillToken, "step_per_seq", c.StepPerSeq,
		"eos_probability", c.EOSProbability, "seed", c.Seed, "deterministic_ids", c.DeterministicIDs,
		"capacity_req_per_s_1024in_128out", fmt.Sprintf("%.2f", c.Capacity(1024, 128)),
		"capacity_req_per_s_256in_256out", fmt.Sprintf("%.2f", c.Capacity(256, 256)))
	var active []any
	for _, p := range s.Faults().probabilities() {
		if p.p > 0 {
			active = append(active, p.name, p.p)
		}
	}
	if len(active) > 0 {
		level.Warn(s.logger).Log(append([]any{"msg", "fault injection active"}, active...)...)
	}
	if c.TraceFile != "" {
		level.Info(s.logger).Log("msg", "writing request trace", "file", c.TraceFile)
	}
	if c.Light.Enabled {
		level.Info(s.logger).Log("msg", "light streaming mode: no engine model", "ttft", c.Light.TTFT, "gap", c.Light.Gap,
			"tokens", c.Light.Tokens, "stats", "/light/stats")
	}
}

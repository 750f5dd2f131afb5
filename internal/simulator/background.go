package simulator

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// Background is a constant production load the simulator serves beside
// its HTTP clients (`--background.rate`): requests of fixed lengths that
// enter the engine directly, at evenly spaced arrivals, counted in its
// metrics as any request (vllm:request_success_total, the running and
// waiting gauges, the token counters). It is what a live server's users
// look like to a `--sweep-mode background` sweep, so that users and tests
// can try one: with a rate P, the engine's capacity for those lengths
// (Config.Capacity) less P is what is left to the sweep. Every request's
// prompt is distinct, so the load never hits the prefix cache. Off (rate
// 0) by default.
type Background struct {
	// Rate is the production rate in requests per second (0: none), at
	// most MaxBackgroundRate.
	Rate float64
	// InputTokens and OutputTokens are each request's prompt and output
	// lengths (ignore_eos). Default 64 and 16, the sweep's default
	// workload.
	InputTokens, OutputTokens int
}

// MaxBackgroundRate bounds Background.Rate: 100,000 req/s, far above what
// the engine model serves.
const MaxBackgroundRate = 100_000

// DefaultBackground returns Background off, with the default lengths.
func DefaultBackground() Background { return Background{InputTokens: 64, OutputTokens: 16} }

// validate reports an invalid background parameter, naming its flag; c is
// the whole configuration (a request must fit its context).
func (b Background) validate(c Config) error {
	switch {
	case math.IsNaN(b.Rate) || b.Rate < 0 || b.Rate > MaxBackgroundRate:
		return fmt.Errorf("--background.rate must be in [0, %d] req/s, got %v", MaxBackgroundRate, b.Rate)
	case b.Rate == 0:
		return nil
	case b.InputTokens < 1:
		return fmt.Errorf("--background.input-len must be >= 1, got %d", b.InputTokens)
	case b.OutputTokens < 1:
		return fmt.Errorf("--background.output-len must be >= 1, got %d", b.OutputTokens)
	case b.InputTokens > c.MaxModelLen-b.OutputTokens:
		return fmt.Errorf("--background.input-len %d + --background.output-len %d exceed --max-model-len %d",
			b.InputTokens, b.OutputTokens, c.MaxModelLen)
	}
	return nil
}

// addBackgroundFlags adds the background load's flags.
func addBackgroundFlags(cmd *kingpin.CmdClause, b *Background) {
	cmd.Flag("background.rate", "Constant production load served beside the HTTP clients, in req/s (evenly spaced "+
		"requests that enter the engine directly and count in its metrics; 0: none): what a --sweep-mode background sweep measures beside.").
		Default(formatFloat(b.Rate)).SetValue(&flagValue[float64]{"background.rate", &b.Rate, parseFloat, formatFloat})
	cmd.Flag("background.input-len", "Prompt tokens of each background request.").
		Default(strconv.Itoa(b.InputTokens)).SetValue(&flagValue[int]{"background.input-len", &b.InputTokens, strconv.Atoi, strconv.Itoa})
	cmd.Flag("background.output-len", "Output tokens of each background request (ignore_eos).").
		Default(strconv.Itoa(b.OutputTokens)).SetValue(&flagValue[int]{"background.output-len", &b.OutputTokens, strconv.Atoi, strconv.Itoa})
}

// startBackground starts the background load's goroutine (none when its
// rate is 0); it stops when the Simulator closes.
func (s *Simulator) startBackground() {
	b := s.cfg.Background
	if b.Rate <= 0 {
		return
	}
	go s.runBackground(b)
}

// runBackground submits one request every 1/rate seconds, on an absolute
// schedule (a late wake-up is caught up at once, so the mean rate holds).
func (s *Simulator) runBackground(b Background) {
	period := time.Duration(float64(time.Second) / b.Rate)
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for k := uint64(0); ; k++ {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if err := s.eng.submit(s.backgroundSequence(b, k)); err != nil {
			return // the engine stopped
		}
		next := start.Add(time.Duration(k+1) * period)
		t.Reset(max(0, time.Until(next)))
	}
}

// backgroundSequence is the k-th background request: a prompt of its own
// (tokens drawn from k, so no two share a cache block) that runs to its
// output length.
func (s *Simulator) backgroundSequence(b Background, k uint64) *sequence {
	prompt := make([]int, b.InputTokens)
	seed := hash2(hash2(uint64(s.cfg.Seed), 0xbac6), k)
	for i := range prompt {
		prompt[i] = 1 + int(hash2(seed, uint64(i))%30000)
	}
	return &sequence{
		prompt:    prompt,
		hashes:    promptBlockHashes(prompt, s.cfg.BlockSize, 0),
		maxTokens: b.OutputTokens,
		finishLen: b.OutputTokens,
		finishWhy: finishLength,
		notify:    make(chan struct{}, 1),
		textSeed:  seed,
	}
}

package simulator_test

import (
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

func TestLeakTmp(t *testing.T) { simulator.New(simulator.DefaultConfig(), nil) }

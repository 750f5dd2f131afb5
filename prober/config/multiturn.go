package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// validateMultiTurn records the problems of a probe's workload.multi_turn
// (nil: none) under the key at fault (workload.multi_turn.turns, ...) and
// reports whether there was any.
func validateMultiTurn(l *problems, mt *workload.MultiTurn) bool {
	if mt == nil {
		return false
	}
	err := mt.Validate()
	if err == nil {
		return false
	}
	// workload.MultiTurn.Validate starts each error with the field's key.
	key, why, ok := strings.Cut(err.Error(), ": ")
	if !ok || strings.ContainsAny(key, " .") {
		return l.add("workload.multi_turn", err)
	}
	return l.add("workload.multi_turn."+key, errors.New(why))
}

// validateMultiTurn refuses a multi-turn probe on a target whose API takes
// no conversations: a session's context is a list of chat messages.
func (t TargetConfig) validateMultiTurn() error {
	if t.api().Conversations {
		return nil
	}
	var l problems
	for i, p := range t.Probes {
		if p.Workload.MultiTurn != nil {
			l.add(fmt.Sprintf("probes[%d].workload.multi_turn", i),
				fmt.Errorf("needs the target's api: %s (a session's context is a list of chat messages), the target has api: %s",
					client.NamesWith(client.WithConversations, "or"), t.API))
		}
	}
	return l.err()
}

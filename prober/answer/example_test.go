package answer_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
)

// A check set is JSONL: one check per line, one expectation each. The judge
// reads a reply (its text, finish_reason and token count) and decides.
func ExampleParse() {
	set, err := answer.Parse("checks.jsonl", strings.NewReader(
		`{"id":"add","prompt":"What is 17 + 25? Answer with the number only.","max_tokens":8,"number":42}`+"\n"+
			`{"id":"stop","prompt":"Count from 1 to 10, separated by commas and spaces.","stop":", 6"}`+"\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	add, stop := set.Items[0], set.Items[1]
	fmt.Println(answer.Judge(add, answer.Reply{Text: " 42", FinishReason: "stop"}))
	fmt.Println(answer.Judge(add, answer.Reply{Text: "43"}))
	fmt.Println(answer.Judge(stop, answer.Reply{Text: "1, 2, 3, 4, 5", FinishReason: "stop"}))

	_, err = answer.Parse("checks.jsonl", strings.NewReader(`{"id":"x","prompt":"p","number":"42"}`))
	fmt.Println(err)
	// Output:
	// {true }
	// {false reply "43" is not 42 ± 0}
	// {true }
	// checks.jsonl:1: number: must be a number, got string
}

// cannedServer stands in for a *client.Client (answer.Doer): it answers
// every check "42".
type cannedServer struct{}

func (cannedServer) Do(_ context.Context, req client.Request, rec *prober.Record) {
	rec.RequestID, rec.FinishReason = req.ID, "stop"
	req.Collect.WriteString("42")
}

// Send sends a set through a request path (a sweep's or a compare side's
// client: sweep.Prepared.CheckClient) and judges each reply; Count tallies
// the outcomes.
func ExampleSend() {
	set, err := answer.Parse("checks.jsonl", strings.NewReader(
		`{"id":"add","prompt":"What is 17 + 25? Answer with the number only.","max_tokens":8,"number":42}`+"\n"+
			`{"id":"capital","prompt":"What is the capital of France? Answer in one word.","contains":"Paris"}`+"\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	results, _, err := answer.Send(context.Background(), cannedServer{}, set,
		answer.SendOptions{API: client.APICompletions, IDPrefix: "llmprobe-run-check-"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		line := r.RequestID + " " + r.Check + " " + string(r.Outcome)
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		fmt.Println(line)
	}
	t := answer.Count(results)
	ratio, _ := t.PassRatio()
	fmt.Printf("%d passed, %d failed: %.2f\n", t.Pass, t.Fail, ratio)
	// Output:
	// llmprobe-run-check-1 add pass
	// llmprobe-run-check-2 capital fail: reply "42" does not contain "Paris"
	// 1 passed, 1 failed: 0.50
}

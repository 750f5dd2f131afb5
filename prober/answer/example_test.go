package answer_test

import (
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober/answer"
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

package client

import (
	"fmt"
	"io"
	"testing"
)

// benchChatStream is vLLM's chat stream of n tokens: the role chunk, one
// content chunk per token (the last with finish_reason), the usage chunk and
// [DONE].
func benchChatStream(n int) [][]byte {
	const head = `data: {"id":"chatcmpl-5f3c0b1e8a2d4c6f9e7b1a3d5c7e9f0b","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct",`
	evs := [][]byte{[]byte(head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")}
	for i := range n {
		finish := "null"
		if i == n-1 {
			finish = `"length"`
		}
		evs = append(evs, fmt.Appendf(nil, head+`"choices":[{"index":0,"delta":{"content":" token%d"},"logprobs":null,"finish_reason":%s}]}`+"\n\n", i, finish))
	}
	evs = append(evs, fmt.Appendf(nil, head+`"choices":[],"usage":{"prompt_tokens":128,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", 128+n, n))
	return append(evs, []byte("data: [DONE]\n\n"))
}

// benchMessagesStream is the same answer as vLLM's /v1/messages streams it
// (serving.py's message_stream_converter).
func benchMessagesStream(n int) [][]byte {
	evs := [][]byte{
		[]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"chatcmpl-5f3c0b1e8a2d4c6f9e7b1a3d5c7e9f0b\",\"content\":[]," +
			"\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":128,\"output_tokens\":0}}}\n\n"),
		[]byte("event: content_block_start\ndata: {\"index\":0,\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"),
	}
	for i := range n {
		evs = append(evs, fmt.Appendf(nil, "event: content_block_delta\ndata: {\"index\":0,\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\" token%d\"}}\n\n", i))
	}
	return append(evs,
		[]byte("event: content_block_stop\ndata: {\"index\":0,\"type\":\"content_block_stop\"}\n\n"),
		fmt.Appendf(nil, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"input_tokens\":128,\"output_tokens\":%d}}\n\n", n),
		[]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
		[]byte("data: [DONE]\n\n"))
}

// BenchmarkMeasureAPI compares the per-token path of chat and the Messages
// API on the same 256-token answer, one event per read: ns, CPU and
// allocations per token (per-request allocations amortised).
func BenchmarkMeasureAPI(b *testing.B) {
	const tokens = 256
	for _, tc := range []struct {
		api string
		evs [][]byte
	}{{APIChat, benchChatStream(tokens)}, {APIMessages, benchMessagesStream(tokens)}} {
		b.Run(tc.api, func(b *testing.B) {
			api, _ := Lookup(tc.api)
			// A copy of the events a run (eventReader trims them), less
			// its allocation.
			next := func() io.Reader { return &eventReader{evs: append([][]byte(nil), tc.evs...)} }
			rec := measureBench{api: &api, tokens: tokens, next: next, unit: "token", perRun: tokens, extraAllocs: 1}.run(b)
			if rec.CompletionTokens != tokens || rec.PromptTokens != 128 || rec.FinishReason != "length" {
				b.Fatalf("record %+v", rec)
			}
		})
	}
}

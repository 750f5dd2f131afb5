package client

import "testing"

// respView is the comparable view of a respEvent.
type respView struct {
	Kind                     respKind
	Delta, Name, Msg, Status string
	Index                    int
	FnItem                   bool
	IncReason                string
	HasUsage                 bool
	Input, Output            int
	Cached, Reason           int
	HasCached, HasReason     bool
}

func viewResp(e *respEvent) respView {
	v := respView{Kind: e.kind, Index: e.index, FnItem: e.fnItem, Status: string(e.status), IncReason: string(e.incReason),
		HasUsage: e.hasUsage, Input: e.input, Output: e.output, Cached: e.cached, Reason: e.reasonTokens,
		HasCached: e.hasCached, HasReason: e.hasReasonTokens}
	if e.delta != nil {
		v.Delta = rawString(e.delta, e.deltaEsc)
	}
	if e.name != nil {
		v.Name = rawString(e.name, e.nameEsc)
	}
	if e.msg != nil {
		v.Msg = rawString(e.msg, e.msgEsc)
	}
	return v
}

func TestDecodeRespEvent(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    respView
		wantErr bool
	}{
		{
			name: "created carries nothing measured",
			data: `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","usage":null,"output":[]}}`,
			want: respView{Kind: respOther, Status: "in_progress"},
		},
		{
			name: "output text delta",
			data: `{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":" Paris\n","logprobs":[]}`,
			want: respView{Kind: respText, Delta: " Paris\n", Index: 1},
		},
		{
			name: "type after delta",
			data: `{"delta":"x","type":"response.output_text.delta"}`,
			want: respView{Kind: respText, Delta: "x"},
		},
		{
			name: "reasoning text delta",
			data: `{"type":"response.reasoning_text.delta","item_id":"rs_1","output_index":0,"delta":"think"}`,
			want: respView{Kind: respReasoning, Delta: "think"},
		},
		{
			name: "reasoning summary delta",
			data: `{"type":"response.reasoning_summary_text.delta","delta":"sum"}`,
			want: respView{Kind: respReasoning, Delta: "sum"},
		},
		{
			name: "function call item added",
			data: `{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","name":"get_weather","arguments":""}}`,
			want: respView{Kind: respItemAdded, Index: 2, FnItem: true, Name: "get_weather"},
		},
		{
			name: "message item added",
			data: `{"type":"response.output_item.added","output_index":0,"item":{"type":"message","role":"assistant","content":[]}}`,
			want: respView{Kind: respItemAdded},
		},
		{
			name: "function call arguments delta (fragment across events)",
			data: `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\"city\":"}`,
			want: respView{Kind: respToolArgs, Index: 2, Delta: `{"city":`},
		},
		{
			name: "completed with usage",
			data: `{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":8},"output_tokens":96,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":108}}}`,
			want: respView{Kind: respCompleted, Status: "completed", HasUsage: true, Input: 12, Output: 96, Cached: 8, Reason: 64, HasCached: true, HasReason: true},
		},
		{
			name: "completed but incomplete",
			data: `{"type":"response.completed","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"output_tokens":4}}}`,
			want: respView{Kind: respCompleted, Status: "incomplete", IncReason: "max_output_tokens", HasUsage: true, Output: 4},
		},
		{
			name: "incomplete event",
			data: `{"type":"response.incomplete","response":{"incomplete_details":{"reason":"content_filter"}}}`,
			want: respView{Kind: respIncomplete, IncReason: "content_filter"},
		},
		{
			name: "failed",
			data: `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}}`,
			want: respView{Kind: respFailed, Status: "failed", Msg: "engine died"},
		},
		{
			name: "error event",
			data: `{"type":"error","code":"server_error","message":"boom \"x\"","param":null}`,
			want: respView{Kind: respError, Msg: `boom "x"`},
		},
		{
			name: "unknown type",
			data: `{"type":"response.future.thing","delta":"x"}`,
			want: respView{Kind: respOther, Delta: "x"},
		},
		{
			name: "the last of duplicate keys wins, a non-string one too",
			data: `{"type":"response.output_item.added","output_index":"2","item":{"type":"function_call","name":"f","type":1,"name":null}}`,
			want: respView{Kind: respItemAdded},
		},
		{name: "usage not an object", data: `{"type":"response.completed","response":{"usage":[1]}}`, wantErr: true},
		{name: "output_tokens not an integer", data: `{"type":"response.completed","response":{"usage":{"output_tokens":1.5}}}`, wantErr: true},
		{name: "truncated", data: `{"type":"response.output_text.delta","delta":"`, wantErr: true},
		{name: "not an object", data: `"x"`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecode(t, tt.data, decodeRespEvent, viewResp, tt.want, tt.wantErr)
		})
	}
}

// TestEventDecodersAllocs: the Responses and Messages API decoders, one
// object loop (decoder.event, members) beside chat's, allocate nothing
// per token event.
func TestEventDecodersAllocs(t *testing.T) {
	resp := []byte(`{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":" Paris","logprobs":[]}`)
	msg := []byte(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" Paris"}}`)
	var re respEvent
	var me msgEvent
	if n := testing.AllocsPerRun(100, func() {
		if err := decodeRespEvent(resp, &re); err != nil {
			t.Fatal(err)
		}
		if err := decodeMsgEvent(msg, &me); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per pair of events", n)
	}
	if string(re.delta) != " Paris" || string(me.delta) != " Paris" {
		t.Errorf("deltas %q, %q", re.delta, me.delta)
	}
}

// TestToolCallFragments assembles chat tool_calls fragments spread over
// events (the id and name on the first, the arguments in pieces, a second
// call by index) and checks them.
func TestToolCallFragments(t *testing.T) {
	var tc toolCalls
	for _, raw := range []string{
		`[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]`,
		`[{"index":0,"function":{"arguments":"{\"city\": "}}]`,
		`[{"index":0,"function":{"arguments":"\"Paris\"}"}},{"index":1,"id":"call_2","function":{"name":"get_weather","arguments":"{}"}}]`,
	} {
		tc.addChat([]byte(raw))
	}
	if len(tc.calls) != 2 || string(tc.calls[0].args) != `{"city": "Paris"}` || tc.calls[1].name != "get_weather" {
		t.Fatalf("calls %+v", tc.calls)
	}
	if why := tc.check([]Tool{weatherTool}, nil); why != "" {
		t.Fatalf("check: %s", why)
	}
	if why := tc.check([]Tool{{Name: "other"}}, nil); why != `tool call 0: function "get_weather" is not one of the request's tools` {
		t.Fatalf("unknown tool: %q", why)
	}
	var bad toolCalls
	bad.addChat([]byte(`[{"index":0,"function":{"name":"get_weather","arguments":"[1]"}}]`))
	if why := bad.check([]Tool{weatherTool}, nil); why != "tool call 0 (get_weather): arguments are not a JSON object" {
		t.Fatalf("array arguments: %q", why)
	}
}

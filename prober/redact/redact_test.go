package redact

import (
	"reflect"
	"testing"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{
			name: "flag=value form",
			in:   []string{"llmprobe", "sweep", "--api-key=sk-123", "--rates", "1,2"},
			want: []string{"llmprobe", "sweep", "--api-key=<redacted>", "--rates", "1,2"},
		},
		{
			name: "flag value form",
			in:   []string{"llmprobe", "--token", "abc", "--model", "m"},
			want: []string{"llmprobe", "--token", "<redacted>", "--model", "m"},
		},
		{
			name: "secret flag followed by a flag keeps the flag",
			in:   []string{"llmprobe", "--auth", "--model", "m"},
			want: []string{"llmprobe", "--auth", "--model", "m"},
		},
		{
			name: "authorization header value",
			in:   []string{"llmprobe", "--header", "Authorization: Bearer x", "-H", "X-Trace: 1"},
			want: []string{"llmprobe", "--header", "Authorization: <redacted>", "-H", "X-Trace: 1"},
		},
		{
			name: "header in flag=value form",
			in:   []string{"--header=X-Api-Key: abc"},
			want: []string{"--header=X-Api-Key: <redacted>"},
		},
		{
			name: "url userinfo",
			in:   []string{"--target", "https://user:pw@example.test:8000/v1"},
			want: []string{"--target", "https://<redacted>@example.test:8000/v1"},
		},
		{
			name: "url userinfo in flag=value form",
			in:   []string{"--metrics-url=http://admin@127.0.0.1:9090/metrics"},
			want: []string{"--metrics-url=http://<redacted>@127.0.0.1:9090/metrics"},
		},
		{
			name: "secret query parameter",
			in:   []string{"--target=http://h/v1?api_key=abc&x=1"},
			want: []string{"--target=http://h/v1?api_key=<redacted>&x=1"},
		},
		{
			name: "metadata key=value with a secret key",
			in:   []string{"--metadata", "hf_token=abc", "--metadata", "gpu=h100"},
			want: []string{"--metadata", "hf_token=<redacted>", "--metadata", "gpu=h100"},
		},
		{
			name: "plural and longer words are not secret",
			in:   []string{"--max-tokens", "128", "--tokenizer", "gpt2", "--max-num-batched-tokens=8192"},
			want: []string{"--max-tokens", "128", "--tokenizer", "gpt2", "--max-num-batched-tokens=8192"},
		},
		{
			name: "key file path is kept",
			in:   []string{"--api-key-file", "/etc/llmprobe/key"},
			want: []string{"--api-key-file", "/etc/llmprobe/key"},
		},
		{
			name: "dotted and underscored names",
			in:   []string{"--web.auth_password", "pw", "--OPENAI_API_KEY=k"},
			want: []string{"--web.auth_password", "<redacted>", "--OPENAI_API_KEY=<redacted>"},
		},
		{
			name: "bare sk key as a positional",
			in:   []string{"sk-abcdef123"},
			want: []string{"<redacted>"},
		},
		{
			name: "secret flag at the end",
			in:   []string{"--api-key"},
			want: []string{"--api-key"},
		},
		{
			name: "after -- values are still redacted",
			in:   []string{"--", "--api-key=x"},
			want: []string{"--", "--api-key=<redacted>"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]string(nil), tc.in...)
			got := Args(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Args(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.in) {
				t.Errorf("Args modified its input: %q", tc.in)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bearer", "401: bad header Bearer abc.def-ghi", "401: bad header Bearer <redacted>"},
		{"authorization line", "sent authorization: Basic dXNlcjpwYXNz\nnext", "sent authorization: <redacted>\nnext"},
		{"basic credentials", "Basic dXNlcjpwYXNzd29yZA==", "Basic <redacted>"},
		{"basic as a word", "basic mode", "basic mode"},
		{"sk key", "invalid key sk-proj-AbC123 given", "invalid key <redacted> given"},
		{"words ending in sk", "disk-usage task-queue", "disk-usage task-queue"},
		{"userinfo", `dial "http://u:p@10.0.0.1/v1": refused`, `dial "http://<redacted>@10.0.0.1/v1": refused`},
		{"query token", "GET /m?access_token=zz#f", "GET /m?access_token=<redacted>#f"},
		{"nothing secret", "connection refused", "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSecretKeyAndMetadata(t *testing.T) {
	tests := []struct {
		key    string
		secret bool
	}{
		{"hf_token", true}, {"api-key", true}, {"Authorization", true}, {"db.password", true},
		{"max_tokens", false}, {"tokenizer", false}, {"gpu", false}, {"note", false},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if got := SecretKey(tc.key); got != tc.secret {
				t.Errorf("SecretKey(%q) = %v, want %v", tc.key, got, tc.secret)
			}
		})
	}
	in := map[string]string{"hf_token": "abc", "note": "Bearer zzz", "gpu": "h100"}
	got := Metadata(in)
	want := map[string]string{"hf_token": Redacted, "note": "Bearer " + Redacted, "gpu": "h100"}
	if !reflect.DeepEqual(got, want) || in["hf_token"] != "abc" {
		t.Errorf("Metadata = %v, want %v (input %v)", got, want, in)
	}
	if Metadata(nil) != nil {
		t.Error("Metadata(nil) is not nil")
	}
	if got := Secrets("key opaque123 in use; Bearer x1", "opaque123", ""); got != "key <redacted> in use; Bearer <redacted>" {
		t.Errorf("Secrets = %q", got)
	}
}

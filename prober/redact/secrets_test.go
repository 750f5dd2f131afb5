package redact

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestRedactor(t *testing.T) {
	r := New("fixed-secret-1", "short", "")
	r.AddCredential("Bearer oauth-token-0001")
	r.AddCredential("Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw-of-alice")))
	r.AddCredential("Token tiny") // the credential alone is too short: the whole value
	r.Add("1234567")              // below MinSecretLen: ignored
	msg := "fixed-secret-1 oauth-token-0001 alice:pw-of-alice " + base64.StdEncoding.EncodeToString([]byte("alice:pw-of-alice")) +
		" pw-of-alice Token tiny 1234567 short"
	got := r.RedactLiterals(msg)
	want := "<redacted> <redacted> <redacted> <redacted> <redacted> <redacted> 1234567 short"
	if got != want {
		t.Errorf("RedactLiterals:\n got %q\nwant %q", got, want)
	}
	if b := r.RedactBytes([]byte(msg)); string(b) != want {
		t.Errorf("RedactBytes: %q", b)
	}
	if !r.Holds("x oauth-token-0001 y") || r.Holds("nothing here") {
		t.Error("Holds")
	}
	// Redact also applies the shape rules.
	if got := r.Redact("Authorization: Bearer zz"); got != "Authorization: <redacted>" {
		t.Errorf("Redact: %q", got)
	}
	var nilR *Redactor
	nilR.Add("ignored-by-nil")
	if nilR.RedactLiterals("a-secret-x") != "a-secret-x" || nilR.Redact("Bearer abc") != "Bearer <redacted>" || nilR.Holds("x") {
		t.Error("a nil Redactor must know no literal and still apply Text")
	}
}

// TestRedactorLongestFirst: a secret holding another goes whole.
func TestRedactorLongestFirst(t *testing.T) {
	r := New("abcdefgh")
	r.Add("abcdefgh-and-more")
	if got := r.RedactLiterals("x abcdefgh-and-more y abcdefgh"); got != "x <redacted> y <redacted>" {
		t.Errorf("got %q", got)
	}
}

// TestRedactorBound: learned secrets are bounded by MaxRecentSecrets, the
// oldest forgotten first; the fixed ones stay.
func TestRedactorBound(t *testing.T) {
	r := New("fixed-secret-1")
	name := func(i int) string { return fmt.Sprintf("learned-%06d", i) }
	for i := range MaxRecentSecrets + 10 {
		r.Add(name(i))
	}
	if n := len(r.Secrets()); n != MaxRecentSecrets+1 {
		t.Fatalf("%d secrets, want %d", n, MaxRecentSecrets+1)
	}
	for i := range 10 {
		if r.Holds(name(i)) {
			t.Errorf("%s should be forgotten", name(i))
		}
	}
	for _, s := range []string{"fixed-secret-1", name(10), name(MaxRecentSecrets + 9)} {
		if !r.Holds(s) {
			t.Errorf("%s should be known", s)
		}
	}
	// Adding a known secret again does not reorder or grow the ring.
	r.Add(name(10))
	if !r.Holds(name(10)) || len(r.Secrets()) != MaxRecentSecrets+1 {
		t.Error("re-adding a known secret changed the set")
	}
}

func TestRedactorConcurrent(t *testing.T) {
	r := New()
	var wg sync.WaitGroup
	// At most MaxRecentSecrets in all, so that no Add by another goroutine
	// can push a secret out of the ring between its Add and its check.
	const goroutines = 8
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range MaxRecentSecrets / goroutines {
				s := fmt.Sprintf("secret-%d-%04d", g, i)
				r.Add(s)
				if got := r.RedactLiterals("<" + s + ">"); got != "<"+Redacted+">" {
					t.Errorf("%s not redacted right after Add: %q", s, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestSecretsMinLength(t *testing.T) {
	if got := Secrets("pw 1234 in abcd1234x", "1234", "abcd1234"); got != "pw 1234 in <redacted>x" {
		t.Errorf("got %q", got)
	}
	if got := SortSecrets([]string{"short", "long-enough", "long-enough", ""}); len(got) != 1 || got[0] != "long-enough" {
		t.Errorf("SortSecrets: %q", got)
	}
}

// BenchmarkRedactorAdd is the per-request cost of registering a credential
// already known (every request but the first with it).
func BenchmarkRedactorAdd(b *testing.B) {
	r := New("fixed-secret-1", "fixed-secret-2")
	r.AddCredential("Bearer oauth-token-0001")
	b.ReportAllocs()
	for b.Loop() {
		r.AddCredential("Bearer oauth-token-0001")
	}
}

// BenchmarkRedactorRedact is the cost of redacting a 1 KiB message with 16
// known secrets (none present: the common case), and of a 1 MiB /metrics
// body.
func BenchmarkRedactorRedact(b *testing.B) {
	r := New()
	for i := range 16 {
		r.Add(fmt.Sprintf("learned-secret-%04d", i))
	}
	msg := strings.Repeat("the server said no to this request. ", 29)
	b.Run("message-1KiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = r.RedactLiterals(msg)
		}
	})
	body := []byte(strings.Repeat("vllm:num_requests_running{model_name=\"m\",instance=\"x\"} 0\n", 1<<20/56))
	b.Run("body-1MiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = r.RedactBytes(body)
		}
	})
}

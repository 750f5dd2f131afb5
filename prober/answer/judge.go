package answer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Reply is what the judge reads of a finished request.
type Reply struct {
	// Text is the generated text (completions' text or chat's content,
	// concatenated).
	Text string
	// FinishReason is the last finish_reason the server sent.
	FinishReason string
	// CompletionTokens is the server's count of generated tokens.
	CompletionTokens int
}

// Verdict is the judge's decision on one reply.
type Verdict struct {
	Pass bool
	// Reason says why a reply failed (empty on a pass); it may quote a
	// bounded part of the reply.
	Reason string
}

// quoteBytes bounds the part of a reply a Reason quotes.
const quoteBytes = 80

// Judge decides whether r meets its expectation. It is pure. Replies are
// compared with leading and trailing white space removed:
//   - exact: the reply equals the text (both trimmed);
//   - contains: the reply contains the text;
//   - regex: the pattern matches the trimmed reply (RE2; anchor it with ^
//     and $ for a whole-reply match), its first MaxRegexReplyBytes at most
//     (less for a large pattern: regexBudget);
//   - number: the trimmed reply is one number (a trailing period and
//     thousands separators allowed) within tolerance of the expected one;
//   - json_schema: the trimmed reply (a Markdown code fence around it is
//     removed) is one JSON value valid against the schema;
//   - stop: the server stopped (finish_reason "stop") and the reply does not
//     contain the stop sequence (servers leave it out of the text);
//   - length: the server stopped at max_tokens (finish_reason "length" with
//     exactly max_tokens generated tokens).
func Judge(it *Item, r Reply) Verdict {
	t := strings.TrimSpace(r.Text)
	fail := func(format string, a ...any) Verdict { return Verdict{Reason: fmt.Sprintf(format, a...)} }
	switch it.Kind {
	case KindExact:
		if t != strings.TrimSpace(it.Text) {
			return fail("reply %s is not %s", quote(t), quote(it.Text))
		}
	case KindContains:
		if !strings.Contains(r.Text, it.Text) {
			return fail("reply %s does not contain %s", quote(t), quote(it.Text))
		}
	case KindRegex:
		if m := cutUTF8(t, it.reBytes); !it.re.MatchString(m) {
			if len(m) < len(t) {
				return fail("reply %s does not match %s (matched on its first %d of %d bytes)", quote(t), quote(it.Text), len(m), len(t))
			}
			return fail("reply %s does not match %s", quote(t), quote(it.Text))
		}
	case KindNumber:
		n, ok := parseNumber(t)
		if !ok {
			return fail("reply %s is not a number", quote(t))
		}
		if d := n - it.Number; d > it.Tolerance || -d > it.Tolerance || d != d {
			return fail("reply %s is not %s ± %s", quote(t), formatNumber(it.Number), formatNumber(it.Tolerance))
		}
	case KindJSONSchema:
		if err := it.schema.Check([]byte(unfence(t))); err != nil {
			return fail("reply %s: %v", quote(t), err)
		}
	case KindStop:
		if strings.Contains(r.Text, it.Text) {
			return fail("reply %s goes past the stop sequence %s", quote(t), quote(it.Text))
		}
		if r.FinishReason != "stop" {
			return fail("finish_reason %s, want \"stop\" (the stop sequence %s was not obeyed)", quote(r.FinishReason), quote(it.Text))
		}
	case KindLength:
		if r.FinishReason != "length" {
			return fail("finish_reason %s, want \"length\" at max_tokens %d", quote(r.FinishReason), it.MaxTokens)
		}
		if r.CompletionTokens != it.MaxTokens {
			return fail("%d tokens generated, want max_tokens %d", r.CompletionTokens, it.MaxTokens)
		}
	default:
		return fail("unknown expectation %q", it.Kind)
	}
	return Verdict{Pass: true}
}

// thousandsRE matches a number written with thousands separators.
var thousandsRE = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)

// parseNumber reads a reply that is one number.
func parseNumber(t string) (float64, bool) {
	t = strings.TrimSuffix(t, ".")
	if thousandsRE.MatchString(t) {
		t = strings.ReplaceAll(t, ",", "")
	}
	if t == "" || strings.ContainsAny(t, "xXoObB_pP") || strings.EqualFold(t, "nan") || strings.Contains(strings.ToLower(t), "inf") {
		return 0, false
	}
	n, err := strconv.ParseFloat(t, 64)
	return n, err == nil
}

// unfence removes a Markdown code fence (```json ... ```) around t.
func unfence(t string) string {
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return t
	}
	body := strings.TrimSuffix(t[3:], "```")
	if i := strings.IndexByte(body, '\n'); i >= 0 && !strings.ContainsAny(body[:i], "{[\"") {
		body = body[i+1:] // the info string (json)
	}
	return strings.TrimSpace(body)
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// quote is s quoted, at most quoteBytes of it.
func quote(s string) string { return strconv.Quote(trim(s, quoteBytes)) }

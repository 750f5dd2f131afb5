package answer

import (
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// The byte budget of a regex check. Go's regexp runs in time linear in the
// reply, but the factor is the pattern's compiled size: a 9-byte
// `\w{999}\d` compiles to about a thousand instructions, and matching it
// against a 4 MiB reply took minutes. So the reply a regex is matched
// against is cut to at most MaxRegexReplyBytes, and further to
// MaxRegexWork divided by the pattern's instruction count: a pattern of
// up to 64 instructions (any ordinary answer pattern) sees the first 64
// KiB; `\w{999}\d` sees about the first 4 KiB.
const (
	// MaxRegexReplyBytes bounds the part of a reply a regex check matches:
	// its first 64 KiB (trimmed, cut at a UTF-8 boundary). A `$` matches
	// at the cut.
	MaxRegexReplyBytes = 64 << 10
	// MaxRegexWork bounds instructions × bytes of one regex match.
	MaxRegexWork = 4 << 20
)

// regexInsts is the instruction count of re's compiled program (the
// size Go's matchers step through per byte); at least 1.
func regexInsts(re *regexp.Regexp) int {
	p, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return 1 // compiled already: cannot happen
	}
	prog, err := syntax.Compile(p.Simplify())
	if err != nil || len(prog.Inst) < 1 {
		return 1
	}
	return len(prog.Inst)
}

// regexBudget is how many bytes of a reply a pattern of insts
// instructions matches against.
func regexBudget(insts int) int {
	return max(1, min(MaxRegexReplyBytes, MaxRegexWork/max(insts, 1)))
}

// cutUTF8 is s cut to at most n bytes, not inside a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

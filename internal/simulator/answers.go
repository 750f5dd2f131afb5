package simulator

import (
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The simulator answers the prompts of the built-in answer-check set
// (prober/answer's builtin.jsonl) as a correct model would: it recognises
// each prompt's form, computes the answer from the prompt's own values
// (numbers, words, names), and streams it, a few bytes per token, ending
// with EOS. It is not a language model: any other prompt gets the usual
// pseudo-random words. The faults wrong-answers, template-broken, truncate
// and nondeterministic change these answers only (docs/simulator.md).

// solver answers one prompt form: the submatches of its pattern give the
// answer, ok false when the values make no sense.
type solver struct {
	re    *regexp.Regexp
	solve func(m []string) (string, bool)
}

// weekdays are the days listed by the days-of-the-week prompt.
var weekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// capitals is the simulator's whole geography.
var capitals = map[string]string{"France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo"}

// maxCount bounds the counting prompts' ranges.
const maxCount = 1000

var solvers = []solver{
	{regexp.MustCompile(`^What is (-?\d+(?:\.\d+)?) ([-+*/]) (-?\d+(?:\.\d+)?)\? Answer with the number only\.$`), solveArithmetic},
	{regexp.MustCompile(`^Which is larger, (-?\d+) or (-?\d+)\? Answer with the number only\.$`), func(m []string) (string, bool) {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		return strconv.Itoa(max(a, b)), true
	}},
	{regexp.MustCompile(`^How many words are in this sentence: "([^"]*)"\? Answer with the number only\.$`), func(m []string) (string, bool) {
		return strconv.Itoa(len(strings.Fields(m[1]))), true
	}},
	{regexp.MustCompile(`^How many letters are in the word "(\pL+)"\? Answer with the number only\.$`), func(m []string) (string, bool) {
		return strconv.Itoa(utf8.RuneCountInString(m[1])), true
	}},
	{regexp.MustCompile(`^Repeat exactly, with nothing else: (.+)$`), func(m []string) (string, bool) { return m[1], true }},
	{regexp.MustCompile(`^Write the word "([^"]+)" in uppercase letters, with nothing else\.$`), func(m []string) (string, bool) {
		return strings.ToUpper(m[1]), true
	}},
	{regexp.MustCompile(`^Write the words "([^"]+)" in reverse order, separated by spaces, with nothing else\.$`), func(m []string) (string, bool) {
		w := strings.Fields(m[1])
		slices.Reverse(w)
		return strings.Join(w, " "), true
	}},
	{regexp.MustCompile(`^Sort these numbers in ascending order, separated by commas and spaces, with nothing else: (-?\d+(?:, -?\d+)*)$`), func(m []string) (string, bool) {
		var ns []int
		for _, f := range strings.Split(m[1], ", ") {
			n, _ := strconv.Atoi(f)
			ns = append(ns, n)
		}
		slices.Sort(ns)
		return joinInts(ns), true
	}},
	{regexp.MustCompile(`^Write the date (\d{1,2}) (\pL+) (\d{4}) in the format YYYY-MM-DD, with nothing else\.$`), func(m []string) (string, bool) {
		t, err := time.Parse("2 January 2006", m[1]+" "+m[2]+" "+m[3])
		if err != nil {
			return "", false
		}
		return t.Format("2006-01-02"), true
	}},
	{regexp.MustCompile(`^Is (\d+) a prime number\? Answer yes or no\.$`), func(m []string) (string, bool) {
		n, ok := new(big.Int).SetString(m[1], 10)
		if !ok {
			return "", false
		}
		if n.ProbablyPrime(20) {
			return "Yes", true
		}
		return "No", true
	}},
	{regexp.MustCompile(`^What is the capital of (\pL+)\? Answer with one word\.$`), func(m []string) (string, bool) {
		c, ok := capitals[m[1]]
		return c, ok
	}},
	{regexp.MustCompile(`^Extract the name and the age from this sentence as a JSON object with keys "name" and "age", with nothing else: (\pL+) is (\d+) years old\.$`), func(m []string) (string, bool) {
		return `{"name": ` + strconv.Quote(m[1]) + `, "age": ` + m[2] + `}`, true
	}},
	{regexp.MustCompile(`^Count from (\d+) to (\d+), separated by commas and spaces, with nothing else\.$`), func(m []string) (string, bool) {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		if a > b || b-a > maxCount {
			return "", false
		}
		var ns []int
		for i := a; i <= b; i++ {
			ns = append(ns, i)
		}
		return joinInts(ns), true
	}},
	{regexp.MustCompile(`^List the days of the week, one per line, with nothing else\.$`), func([]string) (string, bool) {
		return strings.Join(weekdays, "\n"), true
	}},
}

func solveArithmetic(m []string) (string, bool) {
	a, _ := strconv.ParseFloat(m[1], 64)
	b, _ := strconv.ParseFloat(m[3], 64)
	var r float64
	switch m[2] {
	case "+":
		r = a + b
	case "-":
		r = a - b
	case "*":
		r = a * b
	case "/":
		if b == 0 {
			return "", false
		}
		r = a / b
	}
	return strconv.FormatFloat(r, 'f', -1, 64), true
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// maxQuestionBytes bounds the prompts the solvers look at.
const maxQuestionBytes = 4 << 10

// solve returns the answer to question, and whether the simulator knows it.
func solve(question string) (string, bool) {
	q := strings.TrimSpace(question)
	if q == "" || len(q) > maxQuestionBytes {
		return "", false
	}
	for _, s := range solvers {
		if m := s.re.FindStringSubmatch(q); m != nil {
			return s.solve(m)
		}
	}
	return "", false
}

// templateLeak is what a broken chat template leaves around an answer: the
// role tokens a correct template turns into the prompt's structure.
const (
	templateLeakStart = "<|im_start|>assistant\n"
	templateLeakEnd   = "<|im_end|>"
)

// answerPlan is the answer faults drawn for one request.
type answerPlan struct {
	wrong, truncate, flip, template bool
	prefix                          string // the model's first token (modelPrefix; "" for the default model)
}

// modelPrefixes are the first tokens of the models with a model seed: each
// whitespace, which every answer check trims, and none the default model
// writes.
var modelPrefixes = []string{" ", "\n", "  ", "\n\n", " \n", "\t"}

// modelPrefix is the first token of the answers of the model with seed n
// (Config.ModelSeed): "" for 0.
func modelPrefix(n int64) string {
	if n == 0 {
		return ""
	}
	i := n % int64(len(modelPrefixes))
	if i < 0 {
		i = -i
	}
	return modelPrefixes[(i+int64(len(modelPrefixes))-1)%int64(len(modelPrefixes))]
}

// answer is an answered sequence's output: the answer's pieces (one per
// token), and the position of its late, uncertain token (-1: none).
type answer struct {
	pieces  []string
	fragile int
	alt     string // the other likely token at the fragile position
}

// newAnswer builds the output of an answered prompt: the correct answer,
// changed by the faults drawn, cut at the first stop sequence.
func newAnswer(correct string, ap answerPlan, stop []string) *answer {
	text := correct
	if ap.wrong {
		text = wrongAnswer(text)
	}
	a := &answer{pieces: splitPieces(text), fragile: -1}
	if n := len(a.pieces); n >= 2 {
		// The simulated model is unsure of the last token of a longer
		// answer: that is where batch variance flips a greedy choice.
		a.fragile = n - 1
		a.alt = flipPiece(a.pieces[n-1])
		if ap.flip {
			a.pieces[n-1], a.alt = a.alt, a.pieces[n-1]
		}
	}
	if ap.truncate {
		a.cut()
	}
	if ap.prefix != "" {
		a.pieces = append([]string{ap.prefix}, a.pieces...)
		if a.fragile >= 0 {
			a.fragile++
		}
	}
	if ap.template {
		a.pieces = append(append([]string{templateLeakStart}, a.pieces...), templateLeakEnd)
		if a.fragile >= 0 {
			a.fragile++
		}
	}
	a.applyStop(stop)
	return a
}

// cut keeps the first half of the answer (replies cut short).
func (a *answer) cut() {
	n := len(a.pieces)
	if n >= 2 {
		a.pieces = a.pieces[:n/2]
	} else if n == 1 {
		p := a.pieces[0]
		h := len(p) / 2
		for h > 0 && !utf8.RuneStart(p[h]) {
			h--
		}
		a.pieces = []string{p[:h]}
		if h == 0 {
			a.pieces = nil
		}
	}
	if a.fragile >= len(a.pieces) {
		a.fragile = -1
	}
}

// applyStop ends the answer before the first occurrence of a stop sequence
// (left out of the text, as vLLM does by default).
func (a *answer) applyStop(stop []string) {
	text := strings.Join(a.pieces, "")
	at := -1
	for _, s := range stop {
		if i := strings.Index(text, s); s != "" && i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return
	}
	n, keep := 0, []string{}
	for _, p := range a.pieces {
		if n+len(p) > at {
			if at > n {
				keep = append(keep, p[:at-n])
			}
			break
		}
		keep = append(keep, p)
		n += len(p)
	}
	a.pieces = keep
	if a.fragile >= len(keep) {
		a.fragile = -1
	}
}

// maxPieceBytes is the most bytes one simulated answer token carries.
const maxPieceBytes = 4

// splitPieces splits an answer into tokens: a token starts at each space
// or line break and holds at most maxPieceBytes bytes (whole runes).
func splitPieces(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if i > start && (unicode.IsSpace(r) || i-start+utf8.RuneLen(r) > maxPieceBytes) {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// wrongAnswer is a plausible wrong answer that differs from the correct one
// from its first token: yes and no swapped, the first number one higher,
// or the first word's letters reversed.
func wrongAnswer(s string) string {
	switch {
	case strings.HasPrefix(s, "Yes"):
		return "No" + s[3:]
	case strings.HasPrefix(s, "No"):
		return "Yes" + s[2:]
	}
	lo := strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
	if lo < 0 {
		return "I am not sure." + s
	}
	digit := unicode.IsDigit(rune(s[lo]))
	hi := lo
	for hi < len(s) {
		r, n := utf8.DecodeRuneInString(s[hi:])
		if digit && !unicode.IsDigit(r) || !digit && !unicode.IsLetter(r) {
			break
		}
		hi += n
	}
	word := s[lo:hi]
	if digit {
		n, ok := new(big.Int).SetString(word, 10)
		if ok {
			word = n.Add(n, big.NewInt(1)).String()
		}
	} else {
		r := []rune(word)
		slices.Reverse(r)
		if string(r) == word {
			r = append(r, 'x')
		}
		word = string(r)
	}
	return s[:lo] + word + s[hi:]
}

// flipPiece is the other likely token at a fragile position: its first
// digit one higher (9 becomes 0), else its first letter in the other case,
// else a period.
func flipPiece(p string) string {
	for i, r := range p {
		switch {
		case unicode.IsDigit(r):
			return p[:i] + string('0'+(r-'0'+1)%10) + p[i+utf8.RuneLen(r):]
		case unicode.IsUpper(r):
			return p[:i] + string(unicode.ToLower(r)) + p[i+utf8.RuneLen(r):]
		case unicode.IsLower(r):
			return p[:i] + string(unicode.ToUpper(r)) + p[i+utf8.RuneLen(r):]
		}
	}
	return p + "."
}

// answerSequence makes seq answer g's question when the simulator knows
// the answer (and g neither ignores EOS nor asks for structured output):
// the answer's tokens, then EOS (finish_reason stop), or max_tokens of them
// (length).
func answerSequence(seq *sequence, g *genRequest, ap answerPlan) {
	if g.ignoreEOS || g.structured != nil || g.question == "" {
		return
	}
	correct, ok := solve(g.question)
	if !ok {
		return
	}
	a := newAnswer(correct, ap, g.stop)
	seq.answer = a
	n := len(a.pieces) + 1 // and EOS
	n = max(n, g.minTokens)
	if n <= g.maxTokens {
		seq.finishLen, seq.finishWhy = n, finishStop
	} else {
		seq.finishLen, seq.finishWhy = g.maxTokens, finishLength
	}
}

// answerLogprob is the log-probability of candidate k at output position i
// of an answered sequence: the answer's token is near certain, except at
// the fragile position, where the top two are FragileMargin apart.
func answerLogprob(a *answer, i, k int) float64 {
	if i == a.fragile {
		return -0.68 - float64(k)*FragileMargin
	}
	return -0.01 - 4*float64(k)
}

// answerAlt is candidate k (k >= 1) at output position i of an answered
// sequence: at the fragile position the other variant of its token.
func answerAlt(a *answer, i, k int, fallback string) string {
	if i == a.fragile && k == 1 {
		return a.alt
	}
	return fallback
}

// FragileMargin is the top-2 log-probability margin the simulator reports
// at the late, uncertain token of a multi-token answer (logprobs asked):
// small, as at a position where batch variance can flip a greedy choice.
const FragileMargin = 0.02

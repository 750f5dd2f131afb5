package simulator

import (
	"strings"
	"testing"
)

func TestAnswerFaultFlags(t *testing.T) {
	cfg, err := parseFlags("--fault.wrong-answers=0.3", "--fault.truncate=1", "--fault.nondeterministic=0.2", "--fault.template-broken")
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Faults
	if f.WrongAnswers != 0.3 || f.Truncate != 1 || f.Nondeterministic != 0.2 || !f.TemplateBroken {
		t.Errorf("faults %+v", f)
	}
	for flag, want := range map[string]string{
		"--fault.wrong-answers=2":       "--fault.wrong-answers must be a probability in [0, 1], got 2",
		"--fault.truncate=-1":           "--fault.truncate must be a probability",
		"--fault.nondeterministic=NaN":  "--fault.nondeterministic must be a probability",
		"--fault.template-broken=maybe": "unexpected maybe",
	} {
		if _, err := parseFlags(flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", flag, err, want)
		}
	}
}

func TestSolve(t *testing.T) {
	for q, want := range map[string]string{
		"What is 3 * 4? Answer with the number only.":                                                        "12",
		"What is 1.5 + 2.25? Answer with the number only.":                                                   "3.75",
		"Which is larger, -3 or 2? Answer with the number only.":                                             "2",
		"How many words are in this sentence: \"a b c\"? Answer with the number only.":                       "3",
		"How many letters are in the word \"été\"? Answer with the number only.":                             "3",
		"  Repeat exactly, with nothing else: x y  ":                                                         "x y",
		"Write the date 29 February 2028 in the format YYYY-MM-DD, with nothing else.":                       "2028-02-29",
		"Is 91 a prime number? Answer yes or no.":                                                            "No",
		"What is the capital of Japan? Answer with one word.":                                                "Tokyo",
		"Sort these numbers in ascending order, separated by commas and spaces, with nothing else: 3, -1, 2": "-1, 2, 3",
		"Count from 3 to 5, separated by commas and spaces, with nothing else.":                              "3, 4, 5",
	} {
		if got, ok := solve(q); !ok || got != want {
			t.Errorf("solve(%q) = %q, %v; want %q", q, got, ok, want)
		}
	}
	for _, q := range []string{
		"", "hello", "What is 1 / 0? Answer with the number only.",
		"Write the date 30 February 2028 in the format YYYY-MM-DD, with nothing else.",
		"What is the capital of Atlantis? Answer with one word.",
		"Count from 1 to 100000, separated by commas and spaces, with nothing else.",
		"Repeat exactly, with nothing else: " + strings.Repeat("x", maxQuestionBytes),
	} {
		if got, ok := solve(q); ok {
			t.Errorf("solve(%.40q) = %q, want no answer", q, got)
		}
	}
}

func TestNewAnswer(t *testing.T) {
	join := func(a *answer) string { return strings.Join(a.pieces, "") }
	a := newAnswer("The quick brown fox.", answerPlan{}, nil)
	if join(a) != "The quick brown fox." || a.fragile != len(a.pieces)-1 || len(a.pieces) != 7 {
		t.Errorf("pieces %q fragile %d", a.pieces, a.fragile)
	}
	for _, p := range a.pieces {
		if len(p) > maxPieceBytes+1 { // a leading space and 4 bytes
			t.Errorf("piece %q", p)
		}
	}
	if got := join(newAnswer("1, 2, 3, 4, 5, 6, 7", answerPlan{}, []string{"x", ", 6", "4"})); got != "1, 2, 3, " {
		t.Errorf("stop: %q", got)
	}
	if got := join(newAnswer("42", answerPlan{wrong: true}, nil)); got != "43" {
		t.Errorf("wrong: %q", got)
	}
	if got := join(newAnswer("Yes", answerPlan{wrong: true}, nil)); got != "No" {
		t.Errorf("wrong yes: %q", got)
	}
	if got := join(newAnswer("abc def", answerPlan{truncate: true}, nil)); got != "abc" {
		t.Errorf("truncate: %q", got)
	}
	if got := join(newAnswer("Paris", answerPlan{template: true}, nil)); got != templateLeakStart+"Paris"+templateLeakEnd {
		t.Errorf("template: %q", got)
	}
	f := newAnswer("2, 4, 7, 9", answerPlan{flip: true}, nil)
	if got := join(f); got != "2, 4, 7, 0" || f.alt != " 9" {
		t.Errorf("flip: %q alt %q", got, f.alt)
	}
	if one := newAnswer("42", answerPlan{flip: true}, nil); join(one) != "42" || one.fragile != -1 {
		t.Errorf("a one-token answer has no late token: %q %d", join(one), one.fragile)
	}
}

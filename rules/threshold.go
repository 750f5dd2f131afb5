package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/promql/parser"
)

// Threshold is one comparison of a series with a number in a rule's
// expression, e.g. `target_probe:llmprobe_answer_checks_pass:ratio30m < 0.9`:
// Op is the comparison as written with the series on the left ("<", ">",
// "<=", ">=", "==", "!="; a number written on the left is turned around),
// Value the number.
type Threshold struct {
	Op    string
	Value float64
}

// String is the comparison as written, e.g. "< 0.9".
func (t Threshold) String() string { return fmt.Sprintf("%s %g", t.Op, t.Value) }

// FindThreshold returns the comparison of series with a number in the
// expression of the rule named rule (an alert's name or a recording rule's
// record) of files: the landing page evaluates the alerts with the numbers
// this reads (internal/web's tests hold them equal). series may be wrapped
// in functions (label_replace) and parentheses. It is an error when the rule
// is missing, or when series is compared with a number nowhere or with
// different numbers in its expression.
func FindThreshold(files []File, rule, series string) (Threshold, error) {
	p := NewParser()
	var (
		found    bool
		out      Threshold
		seenRule bool
	)
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert != rule && r.Record != rule {
					continue
				}
				seenRule = true
				e, err := p.ParseExpr(r.Expr)
				if err != nil {
					return Threshold{}, fmt.Errorf("%s: %w", rule, err)
				}
				var errs []error
				parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
					b, ok := n.(*parser.BinaryExpr)
					if !ok || !b.Op.IsComparisonOperator() {
						return nil
					}
					op := b.Op
					v, lok := number(b.RHS)
					sel := b.LHS
					if !lok {
						v, lok = number(b.LHS)
						sel = b.RHS
						op = flip(op)
					}
					if !lok || selectorName(sel) != series {
						return nil
					}
					t := Threshold{Op: op.String(), Value: v}
					if found && t != out {
						errs = append(errs, fmt.Errorf("%s compares %s with both %s and %s", rule, series, out, t))
					}
					found, out = true, t
					return nil
				})
				if len(errs) > 0 {
					return Threshold{}, errs[0]
				}
			}
		}
	}
	switch {
	case !seenRule:
		return Threshold{}, fmt.Errorf("no rule %s", rule)
	case !found:
		return Threshold{}, fmt.Errorf("%s compares %s with no number", rule, series)
	}
	return out, nil
}

// number returns the value of a number literal, negated ones included.
func number(e parser.Expr) (float64, bool) {
	switch n := e.(type) {
	case *parser.NumberLiteral:
		return n.Val, true
	case *parser.ParenExpr:
		return number(n.Expr)
	case *parser.UnaryExpr:
		if v, ok := number(n.Expr); ok && n.Op == parser.SUB {
			return -v, true
		}
	}
	return 0, false
}

// selectorName returns the metric name of the one selector e reads through
// parentheses and function calls (label_replace(x, ...)); "" for anything
// else.
func selectorName(e parser.Expr) string {
	switch n := e.(type) {
	case *parser.VectorSelector:
		return n.Name
	case *parser.ParenExpr:
		return selectorName(n.Expr)
	case *parser.Call:
		if len(n.Args) > 0 {
			return selectorName(n.Args[0])
		}
	}
	return ""
}

// flip turns a comparison around: `N < x` is `x > N`.
func flip(op parser.ItemType) parser.ItemType {
	switch op {
	case parser.LSS:
		return parser.GTR
	case parser.GTR:
		return parser.LSS
	case parser.LTE:
		return parser.GTE
	case parser.GTE:
		return parser.LTE
	}
	return op
}

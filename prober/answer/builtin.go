package answer

import (
	"bytes"
	_ "embed"
	"sync"
)

// BuiltinName is the name of the embedded set (answer_checks.set: builtin,
// --answer-checks builtin).
const BuiltinName = "builtin"

//go:embed builtin.jsonl
var builtinJSONL []byte

var builtin = sync.OnceValues(func() (*Set, error) {
	return Parse(BuiltinName, bytes.NewReader(builtinJSONL))
})

// Builtin returns the embedded set: about twenty short items with one right
// answer each (arithmetic, copying a string, counting, following a format,
// JSON extraction, obeying a stop sequence, stopping at max_tokens),
// documented item by item in docs/quality.md. The Set is shared: do not
// modify it.
func Builtin() *Set {
	s, err := builtin()
	if err != nil {
		panic("answer: the builtin set does not parse: " + err.Error()) // a build defect; a test parses it
	}
	return s
}

// LoadSet returns the set a configuration names: BuiltinName, or a file.
func LoadSet(name string) (*Set, error) {
	if name == BuiltinName {
		return Builtin(), nil
	}
	return Load(name)
}

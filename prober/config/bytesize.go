package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ByteSize is a size in bytes. In YAML it is a plain integer (bytes) or an
// integer with a unit: B, kB/KB, MB, GB, TB (powers of 1000) or KiB, MiB,
// GiB, TiB (powers of 1024), e.g. 64MiB; a space before the unit is allowed.
type ByteSize int64

var byteUnits = []struct {
	name string
	mult int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"KB", 1e3}, {"B", 1},
}

// ParseByteSize parses a size as accepted in YAML.
func ParseByteSize(s string) (ByteSize, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.name); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || num == "" || num[0] == '+' {
		return 0, fmt.Errorf("invalid size %q: want an integer number of bytes or an integer with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 64MiB", s)
	}
	if n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return ByteSize(n * mult), nil
}

// String formats the size with the largest binary unit that divides it
// exactly (64MiB), or as plain bytes.
func (b ByteSize) String() string {
	if b != 0 {
		for _, u := range byteUnits[:4] {
			if int64(b)%u.mult == 0 {
				return strconv.FormatInt(int64(b)/u.mult, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// UnmarshalYAML accepts an integer or a string with a unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a size such as 64MiB, got %s", n.Line, describeTag(n.ShortTag()))}}
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*b = v
	return nil
}

// MarshalYAML writes the size as String does.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

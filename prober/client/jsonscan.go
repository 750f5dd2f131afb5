package client

// The JSON scanning primitives of the chunk decoder (chunk.go): skipping
// values, literals, numbers and strings, unescaping.

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// skip validates and consumes any JSON value; depth is the nesting depth a
// container starting here would have.
func (d *decoder) skip(depth int) error {
	switch c := d.peek(); {
	case c == '"':
		_, _, err := d.str()
		return err
	case (c == '{' || c == '[') && depth > maxDepth:
		return d.fail("exceeded max nesting depth")
	case c == '{':
		if empty, err := d.objectOpen(); empty || err != nil {
			return err
		}
		for {
			if _, _, err := d.rawKey(); err != nil {
				return err
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			if end, err := d.objectNext(); end || err != nil {
				return err
			}
		}
	case c == '[':
		if d.arrayOpen() {
			return nil
		}
		for {
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			if end, err := d.arrayNext(); end || err != nil {
				return err
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return d.fail("expected value")
}

// rawKey reads a key and its colon without unescaping.
func (d *decoder) rawKey() ([]byte, bool, error) {
	if d.peek() != '"' {
		return nil, false, d.fail("expected object key")
	}
	k, esc, err := d.str()
	if err != nil {
		return nil, false, err
	}
	d.ws()
	if d.peek() != ':' {
		return nil, false, d.fail("expected colon")
	}
	d.i++
	d.ws()
	return k, esc, nil
}

func (d *decoder) literal(lit string) error {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return nil
	}
	return d.fail("invalid literal")
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() error {
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		d.digits()
	default:
		return d.fail("invalid number")
	}
	if d.peek() == '.' {
		d.i++
		if c := d.peek(); c < '0' || c > '9' {
			return d.fail("invalid number")
		}
		d.digits()
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if c := d.peek(); c < '0' || c > '9' {
			return d.fail("invalid number")
		}
		d.digits()
	}
	return nil
}

func (d *decoder) digits() {
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
}

// str consumes a string and returns its raw content and whether it has
// escapes. Plain runs are scanned eight bytes at a time (specialMask).
func (d *decoder) str() ([]byte, bool, error) {
	b := d.b
	i := d.i + 1 // opening quote
	start := i
	esc := false
	for i < len(b) {
		if i+8 <= len(b) {
			m := specialMask(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the first special byte
		} else if !strSpecial[b[i]] {
			i++
			continue
		}
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			return b[start:i], esc, nil
		case c == '\\':
			esc = true
			i++
			d.i = i
			switch d.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for range 4 {
					if i >= len(b) || !isHex(b[i]) {
						d.i = i
						return nil, false, d.fail("invalid unicode escape")
					}
					i++
				}
			default:
				return nil, false, d.fail("invalid escape")
			}
		default: // c < 0x20
			d.i = i
			return nil, false, d.fail("control character in string")
		}
	}
	d.i = i
	return nil, false, d.fail("unterminated string")
}

// Byte-parallel tests on eight bytes of a uint64 (the "haszero" family of
// bit tricks): the lowest flagged byte of each mask is exact (flags above
// it may be spurious), which is all str needs.
const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// specialMask flags (high bit) the bytes of x that end a plain string run:
// '"', '\\' and control characters (< 0x20). Zero means none.
func specialMask(x uint64) uint64 {
	q := x ^ (swarLo * '"')
	s := x ^ (swarLo * '\\')
	return ((x-swarLo*0x20)&^x | (q-swarLo)&^q | (s-swarLo)&^s) & swarHi
}

// strSpecial marks the bytes that end the plain run of a string.
var strSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// unescape decodes the raw content of a valid JSON string with escapes
// (rare: it allocates).
func unescape(raw []byte) []byte {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return raw
	}
	return []byte(s)
}

// stringIs reports whether the raw JSON string content equals want.
func stringIs(raw []byte, esc bool, want string) bool {
	if esc {
		return string(unescape(raw)) == want
	}
	return string(raw) == want
}

// rawString returns the raw JSON string content as a Go string (invalid
// UTF-8 replaced, as encoding/json does).
func rawString(raw []byte, esc bool) string {
	if esc || !utf8.Valid(raw) {
		return string(unescape(raw))
	}
	return string(raw)
}

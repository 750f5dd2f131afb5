package jsonkind

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// seconds describes itself through its pointer.
type seconds time.Duration

func (*seconds) DescribeJSON() string { return `a duration string such as "30s"` }

// level describes itself by value.
type level int

func (level) DescribeJSON() string { return `"low" or "high"` }

func TestDescribe(t *testing.T) {
	f := func(v any, want string) {
		t.Helper()
		if got := Describe(reflect.TypeOf(v)); got != want {
			t.Errorf("Describe(%T) = %q, want %q", v, got, want)
		}
	}
	f("", "a string")
	f(new(string), "a string")
	f(true, "true or false")
	f(int64(1), "an integer")
	f(uint8(1), "an integer")
	f(1.5, "a number")
	f([]float64{}, "a list")
	f([2]int{}, "a list")
	f(map[string]int{}, "an object")
	f(struct{}{}, "an object")
	f(netip.Addr{}, "a string") // a TextUnmarshaler
	f(seconds(0), `a duration string such as "30s"`)
	f(new(seconds), `a duration string such as "30s"`)
	f(level(0), `"low" or "high"`)
}

// TestDescribeTypeError words the type of a real encoding/json error, as
// the callers do.
func TestDescribeTypeError(t *testing.T) {
	var v struct {
		N  int     `json:"n"`
		D  seconds `json:"d"`
		On *bool   `json:"on"`
	}
	for in, want := range map[string]string{
		`{"n": "x"}`:  "an integer",
		`{"n": 1.5}`:  "an integer",
		`{"on": 1}`:   "true or false",
		`{"d": true}`: `a duration string such as "30s"`,
	} {
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal([]byte(in), &v); !errors.As(err, &te) {
			t.Errorf("%s: %v, want a type error", in, err)
		} else if got := Describe(te.Type); got != want {
			t.Errorf("%s: Describe = %q, want %q", in, got, want)
		}
	}
}

// Package jsonkind words a Go type as the JSON value a decoder of it
// takes ("an integer", "a list", ...), for the errors that tell a person
// what to send instead (a JSON body's field of the wrong type, a trace
// line's). It is the one such describer for JSON input; prober/config
// words YAML's own type names for its errors. DuplicateKey is the one
// check for a key given twice in JSON input (the sweep API's bodies, the
// lines of an answer check set).
package jsonkind

import (
	"encoding"
	"reflect"
)

// Describer is a type that words the JSON value it takes itself: a type
// with its own syntax (a duration string, say) rather than its kind's.
type Describer interface {
	// DescribeJSON returns the words, e.g. `a duration string such as "30s"`.
	DescribeJSON() string
}

var (
	describerType       = reflect.TypeFor[Describer]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Describe words t (a pointer stands for what it points to) as the JSON
// value it takes: a Describer's own words; "a string" for a string or an
// encoding.TextUnmarshaler (which encoding/json reads from a string);
// "true or false"; "an integer"; "a number"; "a list" for a slice or an
// array; "an object" for anything else (a struct, a map).
func Describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Implements(describerType):
		return reflect.Zero(t).Interface().(Describer).DescribeJSON()
	case reflect.PointerTo(t).Implements(describerType):
		return reflect.New(t).Interface().(Describer).DescribeJSON()
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

//go:build !slow

package testutil

// SlowEnabled is true when the tests are built with -tags slow: Slow lets
// the long tests run.
const SlowEnabled = false

//go:build race

package testutil

// RaceEnabled is true when the tests are built with the race detector,
// which slows the code 5 to 10 times: tests that measure a capacity from
// timing (a simulator's knee) skip their timing bounds then.
const RaceEnabled = true

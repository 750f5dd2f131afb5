// Package archtest holds tests of the repository's shape rather than of one
// package: that docs/architecture.md names every package and only packages
// that exist, that every docs/ page named in help text or documentation
// exists, and that the imports between the top-level folders run one way.
package archtest

//go:build !unix

package sweepd

// writable cannot ask the system without writing where access(2) is
// missing: ProbeDir then trusts that an existing directory is writable,
// and CheckDir's write at start-up says otherwise.
func writable(string) error { return nil }

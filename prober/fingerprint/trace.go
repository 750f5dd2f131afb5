package fingerprint

// Trace is the trace a sweep replayed (sweep --trace): the file's hash and
// what was read from it.
type Trace struct {
	// Source is the file as given (redacted); SHA256 is "sha256:" and the
	// hex SHA-256 of its bytes.
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
	// Format is "mooncake" or "offsets"; Entries its requests; BlockSize
	// the tokens of one hash id and HashIDs their number; Reordered the
	// entries sorted into offset order; SpanS the last entry's offset in
	// seconds.
	Format    string  `json:"format"`
	Entries   int     `json:"entries"`
	BlockSize int     `json:"block_size"`
	HashIDs   int     `json:"hash_ids"`
	Reordered int     `json:"reordered"`
	SpanS     float64 `json:"span_s"`
	// Speeds are the replay speeds, one step each.
	Speeds []float64 `json:"speeds"`
	// SharedPrefixTokens and InputTokens sum the whole trace's shared
	// prefixes (from hash_ids) and inputs.
	SharedPrefixTokens int64 `json:"shared_prefix_tokens"`
	InputTokens        int64 `json:"input_tokens"`
}

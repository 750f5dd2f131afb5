package redact

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MinSecretLen is the shortest literal secret a Redactor (and
// Secrets) removes: 8 bytes. A shorter value ("abc", "1234") would
// also match words, numbers and label values by chance and mangle the
// output; such a secret is still caught where it has a shape (Text:
// "Bearer ...", "Basic ...", URL userinfo) and, for basic auth, by the
// base64 of user:password, which is at least 8 bytes.
const MinSecretLen = 8

// MaxRecentSecrets bounds the secrets a Redactor learns while it runs
// (Add: OAuth2 access tokens, the content of rotated credential files, as
// they are sent): the 256 most recently added are kept, older ones are
// forgotten. The secrets it was created with are never forgotten.
const MaxRecentSecrets = 256

// Redactor is the registry of the literal secrets one target's HTTP client
// sends, and the redaction of them: the secrets known from its config
// (New) and those registered as they are sent (Add, called by the
// client's transport for every credential header it writes). It removes
// them by value, whatever their shape, from any text or body that may
// quote a server. Safe for concurrent use; a nil *Redactor knows no
// literal secret (Redact is then Text).
//
// Add costs one atomic load and a map lookup when the secret is known
// (every request but the first with a given credential); Redact costs one
// substring search per secret (about 1 µs for a 1 KiB message and 16
// secrets): it is meant for messages, records and snapshots, not for every
// token of a stream.
type Redactor struct {
	mu     sync.Mutex
	fixed  []string // from the config, never forgotten
	recent []string // ring of learned secrets, at most MaxRecentSecrets
	next   int      // the ring's oldest entry once full
	set    atomic.Pointer[secretSet]
}

// secretSet is an immutable view of a Redactor's secrets.
type secretSet struct {
	known map[string]struct{}
	order []string // longest first (a secret holding another goes whole)
}

// New returns a Redactor that knows secrets (empty and short ones,
// below MinSecretLen, are ignored).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) >= MinSecretLen && !slices.Contains(r.fixed, s) {
			r.fixed = append(r.fixed, s)
		}
	}
	r.publish()
	return r
}

// publish builds the set from fixed and recent (under mu, or before r is
// shared).
func (r *Redactor) publish() {
	known := make(map[string]struct{}, len(r.fixed)+len(r.recent))
	order := make([]string, 0, len(r.fixed)+len(r.recent))
	for _, list := range [][]string{r.fixed, r.recent} {
		for _, s := range list {
			if _, ok := known[s]; !ok {
				known[s] = struct{}{}
				order = append(order, s)
			}
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return len(b) - len(a) })
	r.set.Store(&secretSet{known: known, order: order})
}

// Add registers secrets sent now (empty and short ones are ignored). A
// known secret costs a map lookup; a new one is kept among the
// MaxRecentSecrets most recent. A nil Redactor ignores it.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		if _, ok := r.set.Load().known[s]; ok {
			continue
		}
		r.add(s)
	}
}

func (r *Redactor) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set.Load().known[s]; ok {
		return
	}
	if len(r.recent) < MaxRecentSecrets {
		r.recent = append(r.recent, s)
	} else {
		r.recent[r.next] = s
		r.next = (r.next + 1) % MaxRecentSecrets
	}
	r.publish()
}

// AddCredential registers an HTTP credential header value as sent
// ("Bearer <token>", "Basic <base64>", or a bare value): the value, its
// credential part, and for Basic the decoded user:password and the
// password.
func (r *Redactor) AddCredential(value string) {
	if r == nil {
		return
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok {
		r.Add(value)
		return
	}
	cred = strings.TrimSpace(cred)
	r.Add(cred)
	if len(cred) < MinSecretLen {
		r.Add(value) // the credential alone is too short: the whole value
	}
	if strings.EqualFold(scheme, "basic") {
		if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
			r.AddUserPassword(string(dec))
		}
	}
}

// AddUserPassword registers "user:password" as basic auth sends it: the
// pair, the password and the base64 of the pair.
func (r *Redactor) AddUserPassword(pair string) {
	if r == nil {
		return
	}
	r.Add(pair, base64.StdEncoding.EncodeToString([]byte(pair)))
	if _, pw, ok := strings.Cut(pair, ":"); ok {
		r.Add(pw)
	}
}

// Secrets returns the secrets r knows, longest first (a copy).
func (r *Redactor) Secrets() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.set.Load().order)
}

// Holds reports whether s holds a secret r knows.
func (r *Redactor) Holds(s string) bool {
	if r == nil {
		return false
	}
	for _, sec := range r.set.Load().order {
		if strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

// Redact removes every secret r knows (each occurrence becomes Redacted)
// and then everything Text removes.
func (r *Redactor) Redact(s string) string {
	return Text(r.RedactLiterals(s))
}

// RedactLiterals removes every secret r knows, and nothing else: for text
// whose form must be kept (a /metrics body, a server's log).
func (r *Redactor) RedactLiterals(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.set.Load().order {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// RedactBytes is RedactLiterals for a body; b is returned as it is when it
// holds no secret, else a new slice.
func (r *Redactor) RedactBytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, sec := range r.set.Load().order {
		if bytes.Contains(b, []byte(sec)) {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(Redacted))
		}
	}
	return b
}

// Package redact owns the removal of secrets from everything llmprobe writes
// (logs, metrics pages, artifacts, traces, API answers): by shape (Text: URL
// userinfo, secret query parameters, Bearer/Basic credentials, sk-... keys,
// credential headers; Args: a command line's secret flags; Metadata: secret
// keys), by value (Redactor: a target's registry of the literal secrets its
// HTTP client sends, the config's and the MaxRecentSecrets last sent;
// Secrets for a fixed list), and of echoed prompts (ScrubPrompt).
//
// It is a leaf: it imports nothing of llmprobe's, so any layer may redact
// without depending on the experiment fingerprint or on a client.
package redact

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Redacted replaces every secret that Args and Text remove.
const Redacted = "<redacted>"

// Args returns a copy of a command line with secrets replaced by
// "<redacted>"; args is not modified. It removes:
//
//   - the value of a flag whose name looks secret, in both "--flag=value" and
//     "--flag value" forms (a following argument that starts with "-" is a
//     flag, not a value, and is kept). A name looks secret when one of its
//     parts (split on "-", "_" and ".") ends in key, token, secret, password,
//     passwd, credential(s) or cookie, or starts with auth: --api-key,
//     --hf_token, --auth, --x.authorization. Plural or longer words such as
//     --max-tokens or --tokenizer are not secret. A flag whose last part is
//     "file" or "path" (--api-key-file) names a file, not a secret, and is
//     kept;
//   - in any value: the value of a secret-looking HTTP header
//     ("Authorization: Bearer x" becomes "Authorization: <redacted>"), the
//     value of a secret-looking key=value pair (--metadata token=abc), and
//     everything Text removes (URL userinfo, secret query parameters,
//     Bearer/Basic credentials, sk-... keys).
func Args(args []string) []string {
	out := make([]string, 0, len(args))
	positional := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if positional || !isFlag(a) {
			if a == "--" {
				positional = true
				out = append(out, a)
				continue
			}
			out = append(out, redactValue(a))
			continue
		}
		dashes := a[:len(a)-len(strings.TrimLeft(a, "-"))]
		name, val, hasVal := strings.Cut(a[len(dashes):], "=")
		if secretFlag(name) {
			if hasVal {
				out = append(out, dashes+name+"="+Redacted)
				continue
			}
			out = append(out, a)
			if i+1 < len(args) && !isFlag(args[i+1]) {
				out = append(out, Redacted)
				i++
			}
			continue
		}
		if hasVal {
			out = append(out, dashes+name+"="+redactValue(val))
			continue
		}
		out = append(out, a)
	}
	return out
}

// isFlag reports whether a looks like a flag ("-x", "--x", not "-" or "--").
func isFlag(a string) bool {
	return len(a) > 1 && a[0] == '-' && a != "--"
}

// secretWord reports whether one part of a name looks secret.
func secretWord(w string) bool {
	if strings.HasPrefix(w, "auth") {
		return true
	}
	for _, s := range []string{"key", "token", "secret", "password", "passwd", "credential", "credentials", "cookie"} {
		if strings.HasSuffix(w, s) {
			return true
		}
	}
	return false
}

func splitName(name string) []string {
	return strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return r == '-' || r == '_' || r == '.' || r == ' '
	})
}

// SecretKey reports whether a key or flag name looks secret: one of its
// parts (split on "-", "_", "." and spaces, case-insensitive) ends in key,
// token, secret, password, passwd, credential(s) or cookie, or starts with
// auth ("hf_token", "api-key", "Authorization"). Plural or longer words
// ("max_tokens", "tokenizer") are not secret. It is the test Args applies
// to flags and key=value pairs.
func SecretKey(name string) bool { return secretName(name) }

// Metadata returns a copy of key=value metadata whose values are
// Redacted where the key looks secret (SecretKey) and passed through
// Text elsewhere; nil stays nil.
func Metadata(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if secretName(k) {
			out[k] = Redacted
			continue
		}
		out[k] = Text(v)
	}
	return out
}

// Secrets is Text that also replaces every occurrence of the
// given literal secrets (an API key read from a file, the bearer token,
// password or header values of an http_config, which may have any shape),
// the longest first so that a secret holding another is removed whole;
// secrets shorter than MinSecretLen are ignored (a Redactor does the same
// for the secrets it learns while it runs).
func Secrets(s string, secrets ...string) string {
	if len(secrets) > 1 {
		secrets = SortSecrets(secrets)
	}
	for _, sec := range secrets {
		if len(sec) >= MinSecretLen {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return Text(s)
}

// SortSecrets returns the secrets of a list of at least MinSecretLen
// bytes, without duplicates, the longest first (the order in which to
// replace them); the list is not modified.
func SortSecrets(secrets []string) []string {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if len(s) >= MinSecretLen && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// secretName reports whether any part of name looks secret.
func secretName(name string) bool {
	for _, w := range splitName(name) {
		if secretWord(w) {
			return true
		}
	}
	return false
}

// secretFlag is secretName, except that a flag naming a file or path is not
// secret.
func secretFlag(name string) bool {
	parts := splitName(name)
	if len(parts) == 0 {
		return false
	}
	if last := parts[len(parts)-1]; last == "file" || last == "path" {
		return false
	}
	return secretName(name)
}

var (
	headerRe = regexp.MustCompile(`^(\s*)([A-Za-z0-9_-]+)(\s*:\s*)(.+)$`)
	kvRe     = regexp.MustCompile(`^([A-Za-z0-9_.-]+)=(.+)$`)
)

// redactValue redacts one argument value: a secret header, a secret
// key=value pair, then Text.
func redactValue(v string) string {
	if m := headerRe.FindStringSubmatch(v); m != nil && secretHeader(m[2]) {
		return m[1] + m[2] + m[3] + Redacted
	}
	if m := kvRe.FindStringSubmatch(v); m != nil && secretName(m[1]) {
		return m[1] + "=" + Redacted
	}
	return Text(v)
}

// secretHeader reports whether an HTTP header name carries credentials.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return secretName(n)
}

var (
	userinfoRe = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@?#]+@`)
	queryRe    = regexp.MustCompile(`([?&])([^=&\s#]+)=([^&\s#]*)`)
	bearerRe   = regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]+`)
	basicRe    = regexp.MustCompile(`(?i)\b(basic)(\s+)[A-Za-z0-9+/=]{8,}`)
	skKeyRe    = regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{3,}`)
	headerInRe = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization|x-api-key|api-key|cookie)(\s*:\s*)[^\r\n]+`)
)

// Text removes credentials from free text such as an error message or
// a URL: URL userinfo ("https://u:p@host" becomes "https://<redacted>@host"),
// values of secret-looking query parameters (?api_key=...), Bearer
// credentials, Basic credentials (8 or more base64 characters), OpenAI-style
// "sk-..." keys, and the rest of the line after an Authorization, X-Api-Key,
// Api-Key or Cookie header name. It is safe for concurrent use.
func Text(s string) string {
	s = userinfoRe.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = queryRe.ReplaceAllStringFunc(s, func(m string) string {
		p := queryRe.FindStringSubmatch(m)
		if !secretName(p[2]) || p[3] == Redacted {
			return m
		}
		return p[1] + p[2] + "=" + Redacted
	})
	s = headerInRe.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = bearerRe.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = basicRe.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = skKeyRe.ReplaceAllString(s, Redacted)
	return s
}

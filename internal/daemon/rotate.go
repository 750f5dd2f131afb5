package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/capfile"
)

// DefaultSecretPollInterval is how often the daemon checks the files its
// credentials were read from (config.Config.SecretFiles): when one changed,
// the config is reloaded, as on SIGHUP, so a rotated key (a Kubernetes
// Secret update, a new LoadCredential file) is used within this interval
// plus one probe interval, without a restart.
const DefaultSecretPollInterval = 5 * time.Second

// maxSecretFileBytes caps what is read of a credential file to compare it;
// the loader refuses larger key files anyway.
const maxSecretFileBytes = 64 << 10

// watchSecrets reloads the config file when a file a credential was read
// from changes (its content, or whether it can be read), until ctx ends.
// Only a daemon started from a config file reloads; a reload that fails
// keeps the old config (and its old key) and is not retried until the
// files change again.
func (d *daemon) watchSecrets(ctx context.Context) {
	if !d.fromFile {
		return
	}
	every := d.o.SecretPollInterval
	if every <= 0 {
		every = DefaultSecretPollInterval
	}
	files := func() []string {
		if c := d.safe.Get(); c != nil {
			return c.SecretFiles()
		}
		return nil
	}
	last := secretsDigest(files())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fs := files()
		if secretsDigest(fs) == last {
			continue
		}
		level.Info(d.logger).Log("msg", "a credential file changed: reloading the config", "files", len(fs))
		_ = d.reload(ctx)
		last = secretsDigest(files())
	}
}

// secretsDigest is a SHA-256 over each file's name and content (or why it
// could not be read): it changes when any of them does. The content never
// leaves this function.
func secretsDigest(files []string) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00", f)
		if err := hashFile(h, f); err != nil {
			fmt.Fprintf(h, "error: %v", err)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashFile writes the regular file path (at most maxSecretFileBytes;
// symlinks followed, as in a Kubernetes Secret volume) to w, through the
// bounded reader.
func hashFile(w io.Writer, path string) error {
	b, err := capfile.ReadRegular(path, maxSecretFileBytes)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

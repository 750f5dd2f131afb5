package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
)

var testNow = time.Date(2026, 5, 6, 7, 8, 9, 0, time.FixedZone("CEST", 2*3600))

func newRun(t *testing.T) *Run {
	t.Helper()
	r, err := Create(t.TempDir(), "test", testNow)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mustAppend opens r's appender for name; an error fails the test.
func mustAppend(t *testing.T, r *Run, name string) *Appender {
	t.Helper()
	a, err := r.Append(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// entries lists the names in dir (one level).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name    string
		runName string
		want    []string // dir names after creating len(want) runs
	}{
		{"plain name, UTC stamp", "sweep", []string{"20260506T050809Z-sweep"}},
		{"unsafe characters", "../my run/ü", []string{"20260506T050809Z-my-run"}},
		{"empty name", "", []string{"20260506T050809Z-run"}},
		{"collision gets a suffix", "x", []string{"20260506T050809Z-x", "20260506T050809Z-x-2", "20260506T050809Z-x-3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "runs", "nested") // parents are made
			var got []string
			for range tc.want {
				r, err := Create(out, tc.runName, testNow)
				if err != nil {
					t.Fatal(err)
				}
				if filepath.Dir(r.Dir()) != out {
					t.Errorf("run dir %q not in %q", r.Dir(), out)
				}
				if !r.Created().Equal(testNow) || r.Created().Location() != time.UTC {
					t.Errorf("Created = %v, want %v in UTC", r.Created(), testNow)
				}
				got = append(got, filepath.Base(r.Dir()))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("dirs = %q, want %q", got, tc.want)
			}
			// Nothing but the run dirs is left behind (the probe file is gone).
			if e := entries(t, out); !reflect.DeepEqual(e, tc.want) {
				t.Errorf("out dir holds %q, want %q", e, tc.want)
			}
		})
	}
}

func TestCreateFailsEarly(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(base, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		out     string
		opts    Options
		wantErr error
		skip    string
	}{
		{name: "out dir below a file", out: filepath.Join(file, "runs"), wantErr: ErrUnwritable},
		{name: "out dir is a file", out: file, wantErr: ErrUnwritable},
		{name: "empty out dir", out: "", wantErr: ErrUnwritable},
		{name: "read-only out dir", out: readOnly, wantErr: ErrUnwritable,
			skip: map[bool]string{true: "root writes to read-only directories"}[os.Geteuid() == 0]},
		{name: "not enough free space", out: filepath.Join(base, "full"), opts: Options{MinFreeBytes: 1 << 62}, wantErr: ErrNoSpace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			r, err := tc.opts.Create(tc.out, "x", testNow)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Create error = %v, want %v", err, tc.wantErr)
			}
			if r != nil {
				t.Errorf("Create returned a run on error: %v", r.Dir())
			}
			if tc.out != "" && tc.out != file {
				if e, err := os.ReadDir(tc.out); err == nil && len(e) > 0 {
					t.Errorf("out dir not empty after failure: %v", e)
				}
			}
		})
	}
}

func TestWriteFileAtomic(t *testing.T) {
	r := newRun(t)
	if err := r.WriteFile("command.txt", []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("command.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON("sub/result.json", map[string]any{"b": 1, "a": []int{1}, "c": "<x&y>"}); err != nil {
		t.Fatal(err)
	}
	// A write that fails half-way leaves the old file untouched and no temp
	// file behind.
	boom := errors.New("boom")
	err := writeAtomic(r.Dir(), "command.txt", func(w io.Writer) error {
		if _, err := w.Write(bytes.Repeat([]byte("partial"), 20000)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing write error = %v, want boom", err)
	}
	b, err := os.ReadFile(filepath.Join(r.Dir(), "command.txt"))
	if err != nil || string(b) != "new\n" {
		t.Fatalf("command.txt = %q, %v; want new", b, err)
	}
	if got, want := entries(t, r.Dir()), []string{"command.txt", "sub"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dir holds %q, want %q (no temp files)", got, want)
	}
	j, err := os.ReadFile(filepath.Join(r.Dir(), "sub", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": [\n    1\n  ],\n  \"b\": 1,\n  \"c\": \"<x&y>\"\n}\n"; string(j) != want {
		t.Errorf("result.json = %q, want %q", j, want)
	}
	fi, err := os.Stat(filepath.Join(r.Dir(), "command.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}
}

func TestInvalidNames(t *testing.T) {
	r := newRun(t)
	for _, name := range []string{"", "/abs", "../up", "a/../b", "./a", "a//b", `a\b`, ManifestFile, "x.partial", ".tmp-x", "d/.tmp-x"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			if err := r.WriteFile(name, []byte("x")); err == nil {
				t.Errorf("WriteFile(%q) succeeded", name)
			}
			if _, err := r.Append(name); err == nil {
				t.Errorf("Append(%q) succeeded", name)
			}
		})
	}
	if e := entries(t, r.Dir()); len(e) != 0 {
		t.Errorf("invalid names left files: %q", e)
	}
}

func TestAppender(t *testing.T) {
	r := newRun(t)
	a := mustAppend(t, r, RecordsFile)
	if _, err := r.Append(RecordsFile); err == nil {
		t.Error("a second appender for the same name opened")
	}
	if err := r.WriteFile(RecordsFile, []byte("x")); err == nil {
		t.Error("WriteFile over an open appender succeeded")
	}
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				if err := a.WriteLine(map[string]any{"w": w, "i": i, "pad": strings.Repeat("x", 100)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, r.Dir()); !reflect.DeepEqual(got, []string{RecordsFile + PartialSuffix}) {
		t.Errorf("before Close dir holds %q, want only the .partial file", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := a.WriteLine(1); err == nil {
		t.Error("WriteLine after Close succeeded")
	}
	if got := entries(t, r.Dir()); !reflect.DeepEqual(got, []string{RecordsFile}) {
		t.Errorf("after Close dir holds %q, want only %s", got, RecordsFile)
	}
	b, err := os.ReadFile(filepath.Join(r.Dir(), RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var v struct{ W, I int }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q is not JSON (interleaved write?): %v", l, err)
		}
		seen[fmt.Sprint(v.W, "/", v.I)] = true
	}
	if len(seen) != writers*lines {
		t.Errorf("got %d distinct lines, want %d", len(seen), writers*lines)
	}
	if _, err := r.Append(RecordsFile); err == nil {
		t.Error("Append over an existing file succeeded")
	}
}

func TestSnapshots(t *testing.T) {
	r := newRun(t)
	a := mustAppend(t, r, MetricsDuringFile)
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	want := []SnapshotSection{
		{Snapshot: Snapshot{Step: 0, Label: "rate=1", Phase: "during", Time: at, Source: "http://127.0.0.1:1/metrics"},
			Body: []byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")},
		{Snapshot: Snapshot{Step: 0, Label: "rate=1", Phase: "during", Time: at.Add(time.Second), NotRecorded: "connection refused"}},
		{Snapshot: Snapshot{Step: 1, Label: "rate=2", Phase: "during", Time: at.Add(2 * time.Second)},
			Body: []byte("vllm:num_requests_running 1\n")},
	}
	bodies := [][]byte{want[0].Body, []byte("ignored"), []byte("vllm:num_requests_running 1")} // no trailing newline
	for i, s := range want {
		if err := a.WriteSnapshot(s.Snapshot, bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.Dir(), MetricsDuringFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSnapshots(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v\nfile:\n%s", got, want, b)
	}
	if _, err := ParseSnapshots([]byte("vllm:x 1\n")); err == nil {
		t.Error("ParseSnapshots accepted a file without a marker")
	}
}

// finishedRun writes a small run with an appender left open and finishes it.
func finishedRun(t *testing.T, complete bool, reason string) (*Run, Manifest) {
	t.Helper()
	r := newRun(t)
	fp := fingerprint.New([]string{"llmprobe", "sweep", "--api-key=sk-secret"}, testNow)
	fp.Target.URL = "http://127.0.0.1:8000"
	fp.Metadata = map[string]string{"hf_token": "abcdef123", "gpu": "h100"}
	for name, data := range map[string]string{CommandFile: "llmprobe sweep\n", AnalysisFile: "# analysis\n", "plots/goodput.svg": "<svg/>"} {
		if err := r.WriteFile(name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	a := mustAppend(t, r, RecordsFile)
	if err := a.WriteLine(map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	// The appender is left open: Finish must close and rename it.
	if err := r.Finish(Manifest{Fingerprint: fp, InterruptedReason: reason}, complete); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

func TestFinish(t *testing.T) {
	tests := []struct {
		name       string
		complete   bool
		reason     string
		wantReason string
	}{
		{"complete clears the reason", true, "ignored", ""},
		{"interrupted with a reason", false, "SIGINT during step 2", "SIGINT during step 2"},
		{"interrupted without a reason", false, "", fingerprint.NotRecorded},
		{"a reason quoting credentials is redacted", false, "failed: tokenize: HTTP 401: echo Authorization: Bearer sk-live-12345",
			"failed: tokenize: HTTP 401: echo Authorization: <redacted>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, m := finishedRun(t, tc.complete, tc.reason)
			if m.Complete != tc.complete || m.InterruptedReason != tc.wantReason {
				t.Errorf("complete=%v reason=%q, want %v %q", m.Complete, m.InterruptedReason, tc.complete, tc.wantReason)
			}
			if m.SchemaVersion != SchemaVersion || !m.Created.Equal(testNow) {
				t.Errorf("schema=%d created=%v", m.SchemaVersion, m.Created)
			}
			if m.Fingerprint.End.IsZero() || m.Fingerprint.Target.URL != "http://127.0.0.1:8000" {
				t.Errorf("fingerprint not carried: %+v", m.Fingerprint)
			}
			var paths []string
			for _, f := range m.Files {
				paths = append(paths, f.Path)
				sum, n, err := hashFile(filepath.Join(r.Dir(), filepath.FromSlash(f.Path)))
				if err != nil || sum != f.SHA256 || n != f.Bytes {
					t.Errorf("%s: manifest %s/%d, file %s/%d (%v)", f.Path, f.SHA256, f.Bytes, sum, n, err)
				}
			}
			want := []string{AnalysisFile, CommandFile, "plots/goodput.svg", RecordsFile}
			sort.Strings(want)
			if !reflect.DeepEqual(paths, want) {
				t.Errorf("manifest files = %q, want %q", paths, want)
			}
			raw, err := os.ReadFile(filepath.Join(r.Dir(), ManifestFile))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), "sk-secret") || strings.Contains(string(raw), "abcdef123") {
				t.Error("manifest contains the api key or a secret metadata value")
			}
			if m.Fingerprint.Metadata["hf_token"] != redact.Redacted || m.Fingerprint.Metadata["gpu"] != "h100" {
				t.Errorf("metadata %v", m.Fingerprint.Metadata)
			}
			if !strings.Contains(string(raw), `"--api-key=<redacted>"`) {
				t.Error("manifest lacks the redacted flag, unescaped")
			}
			if !strings.Contains(string(raw), `"complete": `+fmt.Sprint(tc.complete)) {
				t.Errorf("manifest lacks complete=%v", tc.complete)
			}
			// The run is closed for writing.
			if err := r.WriteFile("late.txt", nil); !errors.Is(err, ErrFinished) {
				t.Errorf("WriteFile after Finish = %v, want ErrFinished", err)
			}
			if _, err := r.Append("late.jsonl"); !errors.Is(err, ErrFinished) {
				t.Errorf("Append after Finish = %v, want ErrFinished", err)
			}
			if err := r.Finish(Manifest{}, true); !errors.Is(err, ErrFinished) {
				t.Errorf("second Finish = %v, want ErrFinished", err)
			}
			if v, err := Verify(r.Dir(), VerifyOptions{}); err != nil || len(v.Problems) != 0 {
				t.Errorf("Verify = %v, %v; want no problems", v.Problems, err)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	write := func(t *testing.T, p, data string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	editManifest := func(t *testing.T, dir string, edit func(m map[string]any)) {
		t.Helper()
		p := filepath.Join(dir, ManifestFile)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, err = json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		write(t, p, string(b))
	}
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   []Problem // Detail checked by prefix
	}{
		{"untouched", func(*testing.T, string) {}, []Problem{}},
		{"tampered byte", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, CommandFile), "llmprobe sweeP\n") // same size
		}, []Problem{{Path: CommandFile, Kind: Changed, Detail: "sha256 "}}},
		{"truncated", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, RecordsFile), "")
		}, []Problem{{Path: RecordsFile, Kind: Changed, Detail: "sha256 e3b0c442"}}},
		{"missing file", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "plots", "goodput.svg")); err != nil {
				t.Fatal(err)
			}
		}, []Problem{{Path: "plots/goodput.svg", Kind: Missing}}},
		{"extra files", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "notes.txt"), "added later")
			write(t, filepath.Join(dir, "plots", "x.svg"), "")
		}, []Problem{{Path: "notes.txt", Kind: Extra}, {Path: "plots/x.svg", Kind: Extra}}},
		{"leftover partial file", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "metrics-during.txt.partial"), "x")
		}, []Problem{{Path: "metrics-during.txt.partial", Kind: Extra}}},
		{"file replaced by a symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, AnalysisFile)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(dir, CommandFile), p); err != nil {
				t.Fatal(err)
			}
		}, []Problem{{Path: AnalysisFile, Kind: Invalid, Detail: "not a regular file"}}},
		{"file replaced by a hard link", func(t *testing.T, dir string) {
			// issue 22 risk: a hard link would read a file from elsewhere
			// under the run's name.
			p := filepath.Join(dir, AnalysisFile)
			outside := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.Rename(p, outside); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(outside, p); err != nil {
				t.Skip("no hard links:", err)
			}
		}, []Problem{{Path: AnalysisFile, Kind: Invalid, Detail: "the file has 2 hard links"}}},
		{"manifest path escapes the directory", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				files := m["files"].([]any)
				files[0].(map[string]any)["path"] = "../../etc/passwd"
			})
		}, []Problem{{Path: "../../etc/passwd", Kind: Invalid}, {Path: AnalysisFile, Kind: Extra}}},
		{"manifest lists a file twice", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				m["files"] = append(m["files"].([]any), m["files"].([]any)[0])
			})
		}, []Problem{{Path: AnalysisFile, Kind: Invalid, Detail: "listed twice"}}},
		{"manifest hash edited", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				m["files"].([]any)[1].(map[string]any)["sha256"] = strings.Repeat("0", 64)
			})
		}, []Problem{{Path: CommandFile, Kind: Changed}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := finishedRun(t, true, "")
			tc.tamper(t, r.Dir())
			v, err := Verify(r.Dir(), VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := v.Problems
			if len(got) != len(tc.want) {
				t.Fatalf("Verify = %v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Path != w.Path || g.Kind != w.Kind || !strings.HasPrefix(g.Detail, w.Detail) {
					t.Errorf("problem %d = %v, want %v", i, g, w)
				}
			}
		})
	}
}

func TestVerifyUnreadableManifest(t *testing.T) {
	tests := []struct {
		name     string
		manifest *string // nil: no manifest
		wantErr  string
	}{
		{"missing", nil, "read manifest"},
		{"not json", ptr("{"), "parse"},
		{"no schema version", ptr(`{"files":[]}`), "no schema_version"},
		{"newer schema", ptr(`{"schema_version":99,"files":[]}`), "newer"},
		{"bad fingerprint type", ptr(`{"schema_version":1,"fingerprint":{"target":{"max_model_len":"lots"}}}`), "parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.manifest != nil {
				if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(*tc.manifest), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Verify(dir, VerifyOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Verify error = %v, want one containing %q", err, tc.wantErr)
			}
			if tc.manifest == nil && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing manifest error %v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestFinishRefusesSymlinks(t *testing.T) {
	r := newRun(t)
	if err := os.Symlink("/etc/hostname", filepath.Join(r.Dir(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(Manifest{}, true); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Finish = %v, want a not-a-regular-file error", err)
	}
}

func TestAppenderCloseRenamesAfterWriteError(t *testing.T) {
	r := newRun(t)
	a := mustAppend(t, r, ErrorsFile)
	if err := a.WriteLine(map[string]string{"error": "<redacted>"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	// Break the file under the appender, as a full disk or a dying device
	// would: later writes fail, the data already flushed must survive.
	a.f.Close()
	if err := a.WriteLine(strings.Repeat("x", 128<<10)); err == nil {
		t.Fatal("write to a closed file succeeded")
	}
	if err := a.WriteLine(1); err == nil {
		t.Error("the write error is not sticky")
	}
	if err := a.Close(); err == nil {
		t.Error("Close after a write error returned nil")
	}
	b, err := os.ReadFile(filepath.Join(r.Dir(), ErrorsFile))
	if err != nil {
		t.Fatalf("file not renamed after the error: %v", err)
	}
	if string(b) != "{\"error\":\"<redacted>\"}\n" {
		t.Errorf("content = %q", b)
	}
	if err := r.Finish(Manifest{}, false); err != nil {
		t.Fatal(err)
	}
	if v, err := Verify(r.Dir(), VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Errorf("Verify = %v, %v", v.Problems, err)
	}
}

// TestAppenderDurable: a record written and never followed by Close (the
// process is killed later) reaches the .partial file within FlushInterval,
// and a record larger than the buffer lands in one piece: the file always
// ends on a record boundary.
func TestAppenderDurable(t *testing.T) {
	run, err := Create(t.TempDir(), "durable", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a := mustAppend(t, run, RecordsFile)
	defer a.Close()
	partial := filepath.Join(run.Dir(), RecordsFile+PartialSuffix)
	read := func() string {
		b, err := os.ReadFile(partial)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := a.WriteLine(map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the first record in the .partial file", func() bool { return read() == "{\"n\":1}\n" })
	big := strings.Repeat("x", 100<<10) // larger than the 64 KiB buffer
	for i := range 3 {
		if err := a.WriteLine(map[string]any{"i": i, "pad": strings.Repeat("y", 30<<10)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.WriteLine(map[string]string{"big": big}); err != nil {
		t.Fatal(err)
	}
	// Whatever has reached the file so far ends with a newline, and every
	// line is a whole JSON object.
	for _, s := range []string{read()} {
		if !strings.HasSuffix(s, "\n") {
			t.Fatalf("the file ends mid-record (%d bytes)", len(s))
		}
		for n, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("line %d is not a whole record: %v", n+1, err)
			}
		}
	}
	testutil.Eventually(t, "all five records in the .partial file", func() bool {
		return strings.Count(read(), "\n") == 5
	})
}

func TestVerifyPartial(t *testing.T) {
	run, err := Create(t.TempDir(), "killed", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	recs := mustAppend(t, run, RecordsFile)
	snaps := mustAppend(t, run, MetricsBeforeFile)
	for i := range 3 {
		if err := recs.WriteLine(map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := snaps.WriteSnapshot(Snapshot{Step: 0, Phase: "before", Time: time.Now()}, []byte("vllm:num_requests_running 0\n")); err != nil {
		t.Fatal(err)
	}
	if err := recs.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := snaps.Flush(); err != nil {
		t.Fatal(err)
	}
	// As after SIGKILL: no Close, no manifest.
	v, err := Verify(run.Dir(), VerifyOptions{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.Manifest != nil || v.Records != 3 || len(v.Problems) != 0 {
		t.Fatalf("verification %+v; want 3 records, no manifest, no problems", v)
	}
	// A record cut in the middle is found.
	f, err := os.OpenFile(filepath.Join(run.Dir(), RecordsFile+PartialSuffix), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"i":3,"tru`)
	f.Close()
	v, err = Verify(run.Dir(), VerifyOptions{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.Records != 3 || len(v.Problems) != 1 || v.Problems[0].Kind != Truncated {
		t.Fatalf("verification %+v; want one truncated problem", v)
	}
	recs.Close()
	snaps.Close()
}

// fullDisk writes to f until budget bytes are spent, then fails with
// ENOSPC after a partial write, as a full disk does.
type fullDisk struct {
	f      *os.File
	budget int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) <= d.budget {
		d.budget -= len(p)
		return d.f.Write(p)
	}
	n, _ := d.f.Write(p[:d.budget])
	d.budget = 0
	return n, syscall.ENOSPC
}

// TestAppenderFullDiskTruncates is issue 22's risk "on disk full the
// .partial files are renamed with a half record": a write that fails part
// way, buffered (a flush) or direct (a record larger than the buffer),
// leaves the renamed file ending on its last whole record, Close's error
// saying so, and the file verifies in Partial mode.
func TestAppenderFullDiskTruncates(t *testing.T) {
	line := func(i, size int) string {
		return fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", size)) + "\n"
	}
	for _, tc := range []struct {
		name   string
		big    bool // the failing record is larger than the buffer
		budget int
	}{{"flush", false, 3*len(line(0, 100)) + 40}, {"direct write", true, 2*len(line(0, 100)) + 1000}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(t)
			a := mustAppend(t, r, RecordsFile)
			a.mu.Lock()
			a.w = &fullDisk{f: a.f, budget: tc.budget}
			a.bw = bufio.NewWriterSize(a.w, appendBuffer)
			a.mu.Unlock()
			var want string
			for i := range 2 {
				l := line(i, 100)
				if _, err := a.Write([]byte(l)); err != nil {
					t.Fatal(err)
				}
				want += l
			}
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			if !tc.big {
				l := line(2, 100)
				if _, err := a.Write([]byte(l)); err != nil {
					t.Fatal(err)
				}
				want += l // reaches the disk whole in the partial flush
			}
			size := 100
			if tc.big {
				size = appendBuffer
			}
			_, werr := a.Write([]byte(line(3, size)))
			if err := a.Flush(); werr == nil && err == nil {
				t.Fatal("no write error on a full disk")
			}
			err := a.Close()
			if err == nil || !strings.Contains(err.Error(), "ended mid-record") || !strings.Contains(err.Error(), fmt.Sprintf("truncated to its last whole record (%d bytes)", len(want))) {
				t.Errorf("Close = %v", err)
			}
			b, rerr := os.ReadFile(filepath.Join(r.Dir(), RecordsFile))
			if rerr != nil || string(b) != want {
				t.Errorf("file after Close = %d bytes (%v), want the %d bytes of the whole records", len(b), rerr, len(want))
			}
			if v, err := Verify(r.Dir(), VerifyOptions{Partial: true}); err != nil || len(v.Problems) != 0 {
				t.Errorf("Verify partial = %v, %v", v.Problems, err)
			}
		})
	}
}

package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// TestSettingsOptions checks that the flags keep the defaults (full or
// quick) unless given, and that a bad list names its flag.
func TestSettingsOptions(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		t.Helper()
		app := kingpin.New("t", "")
		cmd := app.Command("bench", "")
		s := &Settings{}
		AddFlags(cmd, s)
		if _, err := app.Parse(append([]string{"bench"}, args...)); err != nil {
			t.Fatal(err)
		}
		return s.Options()
	}
	o, err := parse()
	want := DefaultOptions()
	want.Sections = Sections
	if err != nil || !reflect.DeepEqual(o, want) {
		t.Errorf("no flags: %+v, %v; want %+v", o, err, want)
	}
	o, err = parse("--quick", "--no-pin", "--realtime", "--sections=daemon", "--concurrency=2,3", "--rates=50",
		"--arrival.rates=7.5", "--step-duration=1s", "--arrival.count=9", "--daemon.warmup=2s", "--light.tokens=4")
	want = QuickOptions()
	want.Pin, want.Realtime, want.Sections = false, true, []string{SectionDaemon}
	want.Concurrency, want.Rates, want.ArrivalRates = []int{2, 3}, []float64{50}, []float64{7.5}
	want.StepDuration, want.ArrivalCount, want.DaemonWarmup, want.Tokens = time.Second, 9, 2*time.Second, 4
	if err != nil || !reflect.DeepEqual(o, want) {
		t.Errorf("flags: %+v, %v; want %+v", o, err, want)
	}
	for args, msg := range map[string]string{
		"--concurrency=0":   `--concurrency: invalid value "0"`,
		"--rates=1,x":       `--rates: invalid value "x"`,
		"--arrival.rates=,": `--arrival.rates: empty list`,
	} {
		if _, err := parse(args); err == nil || err.Error() != msg {
			t.Errorf("%s: %v, want %s", args, err, msg)
		}
	}
}

// TestSettingsWorkDir checks the work directory: a given one is created
// and kept, a temporary one removed by cleanup unless Keep.
func TestSettingsWorkDir(t *testing.T) {
	given := filepath.Join(t.TempDir(), "a", "b")
	dir, cleanup, err := (&Settings{Dir: given}).WorkDir()
	if err != nil || dir != given {
		t.Fatalf("WorkDir = %q, %v", dir, err)
	}
	cleanup()
	if _, err := os.Stat(given); err != nil {
		t.Errorf("given directory: %v", err)
	}
	for _, keep := range []bool{false, true} {
		dir, cleanup, err := (&Settings{Keep: keep}).WorkDir()
		if err != nil {
			t.Fatal(err)
		}
		cleanup()
		_, err = os.Stat(dir)
		if kept := err == nil; kept != keep {
			t.Errorf("keep %v: temporary directory kept %v", keep, kept)
		}
		os.RemoveAll(dir)
	}
}

package report

import (
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// flat is a ladder whose latencies do not change with the load (a server
// far from its knee) but for a first step 200 times faster (a log axis),
// one step invalid: every latency panel has five legend entries over lines
// that run level across the top.
func flat() *sweep.Result {
	res := ladder()
	for i, st := range res.Steps {
		st.Stats.TTFT, st.Stats.TPOT = lat(200, 100), lat(200, 20)
		if i == 0 {
			st.Stats.TTFT, st.Stats.TPOT = lat(200, 0.5), lat(200, 0.1)
		}
	}
	res.SLO = map[string]float64{"ttft": 200, "tpot": 40}
	return res
}

// legendRoomOf returns, for each panel laid out as savePanels lays them,
// how far (in points) the highest data stays below the legend's lower
// edge: negative where the data runs under the legend.
func legendRoomOf(t *testing.T, top, bottom *panel) [2]float64 {
	t.Helper()
	c := vgsvg.New(panelsWidth, panelsHeight)
	cs := layoutPanels(top, bottom, draw.New(c))
	var out [2]float64
	for i, pn := range []*panel{top, bottom} {
		dc := pn.DataCanvas(cs[i])
		y := float64(dc.Min.Y) + pn.Y.Norm(pn.top)*float64(dc.Size().Y)
		legendBottom := float64(dc.Max.Y - pn.Legend.Rectangle(cs[i]).Size().Y)
		out[i] = legendBottom - y
	}
	return out
}

// TestLegendClearOfData is issue 22 V6 "plot legends overlap their lines":
// in every panel of goodput.svg and latency.svg the highest value drawn
// stays below the legend, for a ladder and for flat latencies under five
// legend entries.
func TestLegendClearOfData(t *testing.T) {
	for name, res := range map[string]*sweep.Result{"ladder": ladder(), "flat": flat(), "closed": closedLoop(ladder())} {
		g, err := goodputPlot(res)
		if err != nil {
			t.Fatal(err)
		}
		k, err := keepUpPlot(res)
		if err != nil {
			t.Fatal(err)
		}
		ttftSLO, tpotSLO, _ := res.SLOThresholds()
		tt, err := latencyPlot(res, TTFTTitle, func(st *sweep.Step) sweep.Latency { return st.Stats.TTFT }, ttftSLO)
		if err != nil {
			t.Fatal(err)
		}
		tp, err := latencyPlot(res, TPOTTitle, func(st *sweep.Step) sweep.Latency { return st.Stats.TPOT }, tpotSLO)
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]*panel{{g, k}, {tt, tp}} {
			room := legendRoomOf(t, pair[0], pair[1])
			for i, r := range room {
				if r < 0 {
					t.Errorf("%s: %q: the data reaches %.1f pt into the legend", name, pair[i].Title.Text, -r)
				}
			}
		}
	}
}

// TestOneLevelCentred is issue 22 V6 "a one-level plot puts its point on
// the axis edge": a single level lies in the middle of its x axis.
func TestOneLevelCentred(t *testing.T) {
	res := ladder()
	res.Steps = res.Steps[3:4]
	res.Knee = sweep.Knee{Low: 8, Reason: "every valid level passed"}
	g, err := goodputPlot(res)
	if err != nil {
		t.Fatal(err)
	}
	if x := g.X.Norm(8); x < 0.25 || x > 0.75 {
		t.Errorf("the one level sits at %.2f of the x axis [%v, %v], want near the middle", x, g.X.Min, g.X.Max)
	}
	if lo, hi := xRange(points(res, isValid, func(st *sweep.Step) float64 { return 1 })); lo != 0 || hi != 16 {
		t.Errorf("xRange of one level 8 = [%v, %v], want [0, 16]", lo, hi)
	}
}

// TestLegendRowsApart is issue 22 V6 "plot legends overlap": each legend
// row's text touched the next (no padding); rows are now at least 1.2 font
// sizes apart.
func TestLegendRowsApart(t *testing.T) {
	for _, mk := range []func(*sweep.Result) (*panel, error){goodputPlot, keepUpPlot} {
		pn, err := mk(ladder())
		if err != nil {
			t.Fatal(err)
		}
		l := pn.Legend
		if pitch, size := l.TextStyle.Rectangle("Mg").Max.Y+l.Padding, l.TextStyle.Font.Size; pitch < 1.2*size {
			t.Errorf("%q: legend rows %.1f pt apart at a %.1f pt font", pn.Title.Text, pitch, size)
		}
	}
}

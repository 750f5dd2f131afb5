package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Plot titles, also used by tests and docs.
const (
	GoodputTitleRate        = "Goodput vs offered rate"
	GoodputTitleConcurrency = "Goodput vs concurrency"
	KeepUpTitle             = "Keep-up (the knee's criterion)"
	TTFTTitle               = "TTFT percentiles"
	TPOTTitle               = "TPOT percentiles"
)

// logSpan is the ratio of the largest to the smallest positive value above
// which a latency axis is drawn on a log scale (two decades).
const logSpan = 100

var (
	colGoodput    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colThroughput = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colOffered    = color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}
	colKnee       = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colSLO        = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colInvalid    = color.RGBA{R: 0x90, G: 0x90, B: 0x90, A: 0xff}
	colP          = []color.RGBA{
		{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // p50
		{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // p90
		{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // p99
	}
	dashed = []vg.Length{vg.Points(6), vg.Points(3)}
	dotted = []vg.Length{vg.Points(2), vg.Points(2)}
)

// legendRoom scales the y axis above the highest value so that the legend
// (top left) sits above the data; fitLegend raises it where the legend's
// entries need more.
const legendRoom = 1.45

// legendPadding is the space between legend rows, in font sizes.
const legendPadding = 0.4

// panel is one plot of a two-panel SVG and the highest value it draws,
// which fitLegend keeps below the legend.
type panel struct {
	*plot.Plot
	top float64
}

// newPlot returns a plot with the common layout: title, grid, legend at the
// top left.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	// Rows a line apart: without padding each row's text touched the
	// next (issue 22 V6).
	p.Legend.Padding = legendPadding * p.Legend.TextStyle.Font.Size
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	return p
}

// niceTicks are gonum's default tick positions labelled compactly ("250",
// "0.5", "12.5") instead of with a fixed number of decimals ("250.00").
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = num(cleanTick(ts[i].Value))
		}
	}
	return ts
}

// cleanTick removes floating-point noise from a tick value (0.30000000000000004).
func cleanTick(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	if err != nil {
		return v
	}
	return f
}

// percentTicks label a percentage axis every 20 % up to 100, with minor
// ticks every 10 %.
type percentTicks struct{}

// Ticks implements plot.Ticker.
func (percentTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for v := math.Ceil(min/10) * 10; v <= max; v += 10 {
		t := plot.Tick{Value: v}
		if int(v)%20 == 0 && v <= 100 {
			t.Label = num(v)
		}
		ts = append(ts, t)
	}
	return ts
}

// logTicks label 1, 2 and 5 times each power of ten of a log axis, with
// unlabelled minor ticks at the other multiples.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		base := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := cleanTick(base * float64(m))
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = num(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// plottable reports whether a step can be drawn: a finite level above 0.
func plottable(st *sweep.Step) bool {
	l := st.Level
	return l > 0 && !math.IsInf(l, 0) && !math.IsNaN(l)
}

// levelSeries returns, per distinct level of the plottable steps accepted
// by keep, the mean of get over those steps, sorted by level. Non-finite
// values are dropped.
func levelSeries(res *sweep.Result, keep func(*sweep.Step) bool, get func(*sweep.Step) float64) plotter.XYs {
	sum := map[float64]float64{}
	n := map[float64]int{}
	for _, st := range res.Steps {
		if !plottable(st) || !keep(st) {
			continue
		}
		v := get(st)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		l := st.Level
		sum[l] += v
		n[l]++
	}
	xys := make(plotter.XYs, 0, len(sum))
	for l, v := range sum {
		xys = append(xys, plotter.XY{X: l, Y: v / float64(n[l])})
	}
	sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
	return xys
}

// points returns one point per plottable step accepted by keep.
func points(res *sweep.Result, keep func(*sweep.Step) bool, get func(*sweep.Step) float64) plotter.XYs {
	var xys plotter.XYs
	for _, st := range res.Steps {
		if !plottable(st) || !keep(st) {
			continue
		}
		if v := get(st); !math.IsNaN(v) && !math.IsInf(v, 0) {
			xys = append(xys, plotter.XY{X: st.Level, Y: v})
		}
	}
	return xys
}

func isValid(st *sweep.Step) bool   { return st.InKnee() }
func isInvalid(st *sweep.Step) bool { return !st.InKnee() }

// addLine adds a line with points (when xys is not empty) to p under name.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dash []vg.Length, glyph draw.GlyphDrawer) error {
	if len(xys) == 0 {
		return nil
	}
	l, sc, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	l.Dashes = dash
	sc.Color = c
	sc.Shape = glyph
	sc.Radius = vg.Points(2.5)
	p.Add(l, sc)
	p.Legend.Add(name, l, sc)
	return nil
}

// addGuide adds a straight line from (x0, y0) to (x1, y1).
func addGuide(p *plot.Plot, name string, x0, y0, x1, y1 float64, c color.Color, dash []vg.Length) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y1}})
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color = c
	l.Width = vg.Points(1)
	l.Dashes = dash
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
	return nil
}

// addInvalid adds crosses at the invalid steps' values.
func addInvalid(p *plot.Plot, xys plotter.XYs, legend bool) error {
	if len(xys) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("plot invalid steps: %w", err)
	}
	sc.Color = colInvalid
	sc.Shape = draw.CrossGlyph{}
	sc.Radius = vg.Points(4)
	p.Add(sc)
	if legend {
		p.Legend.Add("invalid step (excluded)", sc)
	}
	return nil
}

// addKnee draws the knee as a vertical line from bottom to top, labelled.
func addKnee(p *plot.Plot, res *sweep.Result, bottom, top float64) error {
	if !res.Knee.Found || res.Knee.Level <= 0 || top <= bottom {
		return nil
	}
	k := res.Knee.Level
	if err := addGuide(p, "", k, bottom, k, top, colKnee, dashed); err != nil {
		return err
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    []plotter.XY{{X: k, Y: top}},
		Labels: []string{"knee " + levelText(res, k)},
	})
	if err != nil {
		return fmt.Errorf("plot knee label: %w", err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Color = colKnee
		lb.TextStyle[i].XAlign = draw.XLeft
	}
	lb.Offset = vg.Point{X: vg.Points(3), Y: vg.Points(2)}
	p.Add(lb)
	return nil
}

// maxY returns the largest Y of the series (0 when none).
func maxY(series ...plotter.XYs) float64 {
	return foldXY(series, 0, func(m float64, xy plotter.XY) float64 { return math.Max(m, xy.Y) })
}

// foldXY returns f applied to every point of the series in turn, from init.
func foldXY(series []plotter.XYs, init float64, f func(m float64, xy plotter.XY) float64) float64 {
	m := init
	for _, xys := range series {
		for _, xy := range xys {
			m = f(m, xy)
		}
	}
	return m
}

// xRange returns the x axis range of the series: from 0, unless every
// level lies in the upper half of the range (an adaptive search near its
// knee), then from a round value just below the lowest level, so the steps
// are not squeezed into the right edge.
func xRange(series ...plotter.XYs) (lo, hi float64) {
	hi = maxX(series...)
	min := foldXY(series, math.Inf(1), func(m float64, xy plotter.XY) float64 { return math.Min(m, xy.X) })
	if math.IsInf(min, 1) || min < hi/2 {
		return 0, hi * 1.04
	}
	span := hi - min
	if span <= 0 {
		// One level: centred on an axis from 0 (issue 22 V6: it sat on
		// the right edge).
		return 0, 2 * hi
	}
	step := math.Pow(10, math.Floor(math.Log10(span)))
	lo = math.Max(0, math.Floor((min-span*0.1)/step)*step)
	return lo, hi + (hi-lo)*0.04
}

func maxX(series ...plotter.XYs) float64 {
	return foldXY(series, 0, func(m float64, xy plotter.XY) float64 { return math.Max(m, xy.X) })
}

// noData marks an empty plot.
func noData(p *plot.Plot) error {
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{{X: 0.5, Y: 0.5}}, Labels: []string{"no plottable step"}})
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	p.Add(lb)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	return nil
}

// GoodputSVG draws goodput.svg, two panels against the offered rate (or the
// concurrency in closed loop): goodput (vLLM's request_goodput) and request
// throughput with the y = x line of a server that keeps up; and keep-up,
// the knee's criterion, with its threshold. Invalid steps are crosses and
// the knee a vertical line. Steps at the same level (rounds) are averaged
// for the lines. Burst steps are not drawn.
func GoodputSVG(res *sweep.Result) ([]byte, error) {
	top, err := goodputPlot(res)
	if err != nil {
		return nil, err
	}
	bottom, err := keepUpPlot(res)
	if err != nil {
		return nil, err
	}
	return savePanels(top, bottom)
}

func goodputPlot(res *sweep.Result) (*panel, error) {
	p := newPlot(GoodputTitleRate, "offered rate (req/s)", "requests/s")
	if closed(res) {
		p.Title.Text = GoodputTitleConcurrency
		p.X.Label.Text = "concurrency"
	}
	// Without an SLO there is no goodput (result.json writes null): the
	// plot shows the throughput alone, never a "goodput" equal to it.
	withSLO := sloSet(res)
	var good plotter.XYs
	if withSLO {
		good = levelSeries(res, isValid, func(st *sweep.Step) float64 { return st.Stats.RequestGoodput })
	}
	thr := levelSeries(res, isValid, func(st *sweep.Step) float64 { return st.Stats.RequestThroughput })
	bad := points(res, isInvalid, func(st *sweep.Step) float64 {
		if withSLO {
			return st.Stats.RequestGoodput
		}
		return st.Stats.RequestThroughput
	})
	if len(good)+len(thr)+len(bad) == 0 {
		return &panel{Plot: p}, noData(p)
	}
	xmax := maxX(good, thr, bad)
	top := maxY(good, thr, bad)
	if !closed(res) {
		top = math.Max(top, xmax)
		x0, _ := xRange(good, thr, bad)
		if err := addGuide(p, "offered (y = x)", x0, x0, xmax, xmax, colOffered, dashed); err != nil {
			return nil, err
		}
	}
	if withSLO {
		if err := addLine(p, "goodput (request_goodput)", good, colGoodput, nil, draw.CircleGlyph{}); err != nil {
			return nil, err
		}
	}
	if err := addLine(p, "request throughput", thr, colThroughput, dashed, draw.SquareGlyph{}); err != nil {
		return nil, err
	}
	if err := addInvalid(p, bad, true); err != nil {
		return nil, err
	}
	if err := addKnee(p, res, 0, top); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = xRange(good, thr, bad)
	p.Y.Min = 0
	p.Y.Max = top * legendRoom
	return &panel{Plot: p, top: top}, nil
}

func keepUpPlot(res *sweep.Result) (*panel, error) {
	p := newPlot(KeepUpTitle, "offered rate (req/s)", "keep-up (%)")
	if closed(res) {
		p.X.Label.Text = "concurrency"
	}
	get := func(st *sweep.Step) float64 { return 100 * math.Min(st.Stats.GoodputRatio, 1) }
	kept := levelSeries(res, isValid, get)
	bad := points(res, isInvalid, get)
	if len(kept)+len(bad) == 0 {
		return &panel{Plot: p}, noData(p)
	}
	xmax := maxX(kept, bad)
	r := 100 * ratio
	x0, x1 := xRange(kept, bad)
	if err := addGuide(p, fmt.Sprintf("keeps up at %s", pct(ratio)), x0, r, xmax, r, colSLO, dashed); err != nil {
		return nil, err
	}
	if err := addLine(p, "keep-up", kept, colGoodput, nil, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	if err := addInvalid(p, bad, true); err != nil {
		return nil, err
	}
	bottom := math.Min(minY(kept, bad), r)
	lo := math.Max(0, math.Floor((bottom-5)/10)*10)
	if err := addKnee(p, res, lo, 100); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = x0, x1
	p.Y.Min, p.Y.Max = lo, 100+(100-lo)*0.3
	p.Y.Tick.Marker = percentTicks{}
	return &panel{Plot: p, top: 100}, nil
}

// minY returns the smallest Y of the series (+Inf when none).
func minY(series ...plotter.XYs) float64 {
	m := math.Inf(1)
	for _, xys := range series {
		for _, xy := range xys {
			m = math.Min(m, xy.Y)
		}
	}
	return m
}

// latencyPlot draws one metric's p50/p90/p99 against the level with its SLO
// threshold (thr > 0) and the knee, on a log scale when the values span
// more than two decades.
func latencyPlot(res *sweep.Result, title string, get func(*sweep.Step) sweep.Latency, thr float64) (*panel, error) {
	p := newPlot(title, "offered rate (req/s)", "ms")
	if closed(res) {
		p.X.Label.Text = "concurrency"
	}

	has := func(st *sweep.Step) bool { return get(st).N > 0 }
	validHas := func(st *sweep.Step) bool { return st.InKnee() && has(st) }
	ps := []struct {
		name string
		get  func(sweep.Latency) float64
		dash []vg.Length
	}{
		{"p50", func(x sweep.Latency) float64 { return x.P50 }, nil},
		{"p90", func(x sweep.Latency) float64 { return x.P90 }, dotted},
		{"p99", func(x sweep.Latency) float64 { return x.P99 }, dashed},
	}
	var all []plotter.XYs
	for _, q := range ps {
		all = append(all, levelSeries(res, validHas, func(st *sweep.Step) float64 { return q.get(get(st)) }))
	}
	bad := points(res, func(st *sweep.Step) bool { return !st.InKnee() && has(st) }, func(st *sweep.Step) float64 { return get(st).P99 })
	all = append(all, bad)
	if maxX(all...) == 0 {
		return &panel{Plot: p}, noData(p)
	}
	top := maxY(all...)
	if thr > 0 {
		top = math.Max(top, thr)
	}
	low := minPositive(all...)
	if thr > 0 {
		low = math.Min(low, thr)
	}
	logScale := low > 0 && !math.IsInf(low, 1) && top/low > logSpan
	bottom := 0.0
	if logScale {
		// A log axis cannot show 0: drop non-positive points.
		for i := range all {
			all[i] = positive(all[i])
		}
		bad = all[len(all)-1]
		bottom = math.Pow(10, math.Floor(math.Log10(low)))
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Label.Text = "ms (log scale)"
	}
	for i, q := range ps {
		if err := addLine(p, q.name, all[i], colP[i], q.dash, draw.CircleGlyph{}); err != nil {
			return nil, err
		}
	}
	if err := addInvalid(p, bad, true); err != nil {
		return nil, err
	}
	if thr > 0 {
		x0, _ := xRange(all...)
		if err := addGuide(p, fmt.Sprintf("SLO %s ms", num(thr)), x0, thr, maxX(all...), thr, colSLO, dashed); err != nil {
			return nil, err
		}
	}
	if err := addKnee(p, res, bottom, top); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = xRange(all...)
	if logScale {
		p.Y.Min = bottom
		p.Y.Max = math.Pow(10, math.Log10(top)+(math.Log10(top)-math.Log10(bottom))*0.35)
	} else {
		p.Y.Min = 0
		p.Y.Max = top * legendRoom
	}
	return &panel{Plot: p, top: top}, nil
}

// minPositive returns the smallest Y > 0 of the series (+Inf when none).
func minPositive(series ...plotter.XYs) float64 {
	m := math.Inf(1)
	for _, xys := range series {
		for _, xy := range xys {
			if xy.Y > 0 {
				m = math.Min(m, xy.Y)
			}
		}
	}
	return m
}

// positive returns the points of xys with Y > 0.
func positive(xys plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, 0, len(xys))
	for _, xy := range xys {
		if xy.Y > 0 {
			out = append(out, xy)
		}
	}
	return out
}

// LatencySVG draws latency.svg: two panels, TTFT and TPOT p50/p90/p99
// against the offered rate (or concurrency), each with its SLO threshold as
// a horizontal line and the knee as a vertical one, on a log scale when the
// values span more than two decades. Invalid steps' p99s are crosses; burst
// steps are not drawn.
func LatencySVG(res *sweep.Result) ([]byte, error) {
	x := "offered rate"
	if closed(res) {
		x = "concurrency"
	}
	ttftSLO, tpotSLO, _ := res.SLOThresholds()
	ttft, err := latencyPlot(res, TTFTTitle+" vs "+x, func(st *sweep.Step) sweep.Latency { return st.Stats.TTFT }, ttftSLO)
	if err != nil {
		return nil, err
	}
	tpot, err := latencyPlot(res, TPOTTitle+" vs "+x, func(st *sweep.Step) sweep.Latency { return st.Stats.TPOT }, tpotSLO)
	if err != nil {
		return nil, err
	}
	return savePanels(ttft, tpot)
}

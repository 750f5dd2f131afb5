package report

import (
	"bytes"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// savePanels draws two plots one above the other into an SVG.
func savePanels(top, bottom *panel) ([]byte, error) {
	c := vgsvg.New(panelsWidth, panelsHeight)
	canvases := layoutPanels(top, bottom, draw.New(c))
	top.Draw(canvases[0])
	bottom.Draw(canvases[1])
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("write svg: %w", err)
	}
	return buf.Bytes(), nil
}

// The size of a two-panel SVG.
const (
	panelsWidth  = 8 * vg.Inch
	panelsHeight = 9 * vg.Inch
)

// layoutPanels aligns the two plots on dc, one above the other, raises
// each one's y axis so that its data stays below its legend (fitLegend),
// and returns their canvases.
func layoutPanels(top, bottom *panel, dc draw.Canvas) [2]draw.Canvas {
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadX: vg.Points(6), PadY: vg.Points(18)}
	plots := [][]*plot.Plot{{top.Plot}, {bottom.Plot}}
	cs := plot.Align(plots, tiles, dc)
	fitLegend(top, cs[0][0])
	fitLegend(bottom, cs[1][0])
	cs = plot.Align(plots, tiles, dc) // the y tick labels may have widened
	return [2]draw.Canvas{cs[0][0], cs[1][0]}
}

// legendGap is the room kept between the legend and the highest data.
const legendGap = vg.Length(4)

// legendClear is the fraction of p's data height below its legend (at the
// top of the data area, which the legend's canvas reaches at least to):
// where the data may go without running under the legend.
func legendClear(p *plot.Plot, c draw.Canvas) float64 {
	h := p.Legend.Rectangle(c).Size().Y
	if h == 0 {
		return 1
	}
	return 1 - float64(h+legendGap)/float64(p.DataCanvas(c).Size().Y)
}

// fitLegend raises pn's y axis maximum when its highest data would reach
// into the legend (issue 22 V6: the legend overlapped the lines): the data
// then takes legendClear of the height, at least minDataShare.
func fitLegend(pn *panel, c draw.Canvas) {
	p := pn.Plot
	if !(pn.top > p.Y.Min) {
		return
	}
	free := math.Max(legendClear(p, c), minDataShare)
	if p.Y.Norm(pn.top) <= free {
		return
	}
	if _, ok := p.Y.Scale.(plot.LogScale); ok && p.Y.Min > 0 {
		lo := math.Log10(p.Y.Min)
		p.Y.Max = math.Pow(10, lo+(math.Log10(pn.top)-lo)/free)
		return
	}
	p.Y.Max = p.Y.Min + (pn.top-p.Y.Min)/free
}

// minDataShare is the least of a panel's height its data keeps, however
// many legend entries it has.
const minDataShare = 0.4

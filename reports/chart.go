package reports

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// ChartFile is the name of the SVG timeline of the i-th mode result (0-based),
// written beside report.md.
func ChartFile(i int, m scenario.ModeResult) string {
	return fmt.Sprintf("timeline-%d-%s.svg", i+1, m.Mode)
}

// maxMermaidPoints bounds the mermaid chart's x axis: longer series are
// merged into wider buckets so labels stay readable.
const maxMermaidPoints = 60

// merged is a series regrouped into buckets of factor original buckets.
type merged struct {
	widthMS         float64
	sent, delivered []int
	notUp           []bool
}

func merge(d *metrics.SeriesData, maxPoints int) merged {
	factor := (d.Len() + maxPoints - 1) / maxPoints
	factor = max(factor, 1)
	n := (d.Len() + factor - 1) / factor
	m := merged{widthMS: d.BucketMS * float64(factor), sent: make([]int, n), delivered: make([]int, n), notUp: make([]bool, n)}
	first := firstAttempts(d)
	for i := range d.Len() {
		j := i / factor
		m.sent[j] += first[i]
		m.delivered[j] += at(d.Delivered, i)
		if d.Broker[i] != metrics.StateUp {
			m.notUp[j] = true
		}
	}
	return m
}

// Mermaid writes the mode's series as a fenced mermaid xychart-beta block
// (GitHub renders it, also in a job summary, where a linked file does not
// resolve): a bar at full height for each bucket in which the broker was not
// up (down, paused, disconnected or blocked), then two lines, the messages
// sent (first attempts) and delivered so far at each bucket's end, so what
// never arrived is the gap between them. It writes nothing without a
// series, and returns the first error writing to w.
func Mermaid(w io.Writer, m scenario.ModeResult) error {
	return sticky(w, func(w io.Writer) error { return writeMermaid(w, m) })
}

func writeMermaid(w io.Writer, m scenario.ModeResult) error {
	d := m.Series
	if d == nil || d.Len() == 0 || d.BucketMS <= 0 {
		return nil
	}
	g := merge(d, maxMermaidPoints)
	n := len(g.sent)
	xs := make([]string, n)
	bars, sent, deliv := make([]string, n), make([]string, n), make([]string, n)
	// The bars reach a tenth above the highest line, so a line at its
	// highest still shows against them.
	top := int(math.Ceil(float64(max(total(g.sent), total(g.delivered), 1)) * 1.1))
	cs, cd := 0, 0
	for i := range n {
		cs += g.sent[i]
		cd += g.delivered[i]
		xs[i] = strconv.FormatFloat(float64(i+1)*g.widthMS/1000, 'f', -1, 64)
		sent[i], deliv[i] = strconv.Itoa(cs), strconv.Itoa(cd)
		bars[i] = "0"
		if g.notUp[i] {
			bars[i] = strconv.Itoa(top)
		}
	}
	_, err := fmt.Fprintf(w, "```mermaid\n%%%%{init: {\"themeVariables\": {\"xyChart\": {\"plotColorPalette\": \"#f2b8b5, #1f77b4, #9467bd\"}}}}%%%%\nxychart-beta\n"+
		"    title \"%s: messages sent vs %s, cumulative (bars: broker not up)\"\n"+
		"    x-axis \"s since burst start\" [%s]\n"+
		"    y-axis \"messages\" 0 --> %d\n"+
		"    bar [%s]\n"+
		"    line [%s]\n"+
		"    line [%s]\n```\n",
		label(m), deliveredLine(m), strings.Join(xs, ", "), top,
		strings.Join(bars, ", "), strings.Join(sent, ", "), strings.Join(deliv, ", "))
	return err
}

var (
	colSent      = color.RGBA{0x1f, 0x77, 0xb4, 0xff} // blue
	colAcked     = color.RGBA{0x2c, 0xa0, 0x2c, 0xff} // green
	colDelivered = color.RGBA{0x94, 0x67, 0xbd, 0xff} // purple
	colFault     = color.RGBA{0xd6, 0x27, 0x28, 0xff} // red
	colRecovery  = color.RGBA{0x00, 0x6d, 0x2c, 0xff} // dark green
	colReconnect = color.RGBA{0x17, 0xbe, 0xcf, 0xff} // cyan
	colRepublish = color.RGBA{0x8c, 0x56, 0x4b, 0xff} // brown
	colDrain     = color.RGBA{0x7f, 0x7f, 0x7f, 0xff} // grey
	// Translucent (non-premultiplied) so grid and lines show through.
	stateColors = map[metrics.BrokerState]color.Color{
		metrics.StateDown:         color.NRGBA{0xd6, 0x27, 0x28, 0x40},
		metrics.StateDisconnected: color.NRGBA{0xff, 0x7f, 0x0e, 0x40},
		metrics.StatePaused:       color.NRGBA{0x7f, 0x7f, 0x7f, 0x40},
		metrics.StateBlocked:      color.NRGBA{0xbc, 0xbd, 0x22, 0x50},
	}
)

// Chart geometry: two panels stacked in the left part, the legend in a
// column of its own on the right, so it never covers a line.
const (
	chartWidth = 11 * vg.Inch
	// maxChartBuckets bounds the points a chart draws per line: a longer
	// series is regrouped (SeriesData.Coarsen), since 11 inches hold no
	// more and millions of points cost gigabytes to draw.
	maxChartBuckets = 2000
	chartHeight     = 7 * vg.Inch
	legendWidth     = 2.9 * vg.Inch
	panelPadding    = vg.Inch / 5
)

// SVG writes the mode's timeline as an SVG chart (gonum.org/v1/plot), two
// panels against seconds since the burst start: above, the cumulative
// messages sent (first attempts), acked (confirm modes) and delivered, so
// what never arrived is the gap between the sent and delivered lines; below,
// published, acked and delivered msg/s per bucket on a scale that fits the
// publishing phase (the drain's burst of deliveries is clipped, and the
// panel's title says at what). Both panels shade the stretches in which the
// broker was down, paused, disconnected or blocked, from the instant each
// began (SeriesData.States), and mark the faults, the broker accepting AMQP
// again, publisher reconnects, republishes and the drain's start. The legend
// sits beside the panels. It returns an error when the mode has no series,
// and the first error writing to w.
func SVG(w io.Writer, m scenario.ModeResult) error {
	return sticky(w, func(w io.Writer) error { return renderChart(w, m, "svg") })
}

// renderChart draws mode m's chart in format (svg, png, pdf…, see
// draw.NewFormattedCanvas).
func renderChart(w io.Writer, m scenario.ModeResult, format string) error {
	if m.Series == nil || m.Series.Len() == 0 || m.Series.BucketMS <= 0 {
		return fmt.Errorf("%s: no series to chart", label(m))
	}
	d, factor := m.Series.Coarsen(maxChartBuckets)
	m.Series = d
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(24)
	legend.Padding = vg.Points(4)
	legend.TextStyle.Font.Size = vg.Points(10)

	spans, marks := shadeSpans(d, m.Events), chartMarks(d, m.Events)
	xMax := float64(d.Len()) * d.BucketMS / 1000
	cum, rates := cumulativePanel(m), ratesPanel(m)
	// The legend lists the states and marks once, from the first panel.
	if err := cum.fill(&legend, true, spans, marks, xMax); err != nil {
		return err
	}
	if factor > 1 {
		rates.p.Title.Text += fmt.Sprintf(" (%d buckets of %s ms each)", factor, strconv.FormatFloat(d.BucketMS/float64(factor), 'f', -1, 64))
	}
	if err := rates.fill(&legend, false, spans, marks, xMax); err != nil {
		return err
	}

	cw, err := draw.NewFormattedCanvas(chartWidth, chartHeight, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: panelPadding, PadBottom: panelPadding, PadLeft: panelPadding, PadRight: panelPadding, PadY: panelPadding}
	canvases := plot.Align([][]*plot.Plot{{cum.p}, {rates.p}}, tiles, draw.Crop(dc, 0, -legendWidth, 0, 0))
	cum.p.Draw(canvases[0][0])
	rates.p.Draw(canvases[1][0])
	legend.Draw(draw.Crop(dc, chartWidth-legendWidth, 0, 0, -2*panelPadding))
	_, err = cw.WriteTo(w)
	return err
}

// panel is one of the chart's panels: its plot, y axis top and lines.
type panel struct {
	p     *plot.Plot
	top   float64
	lines []panelLine
}

// panelLine is a line of a panel, width in points.
type panelLine struct {
	name  string
	xys   plotter.XYs
	col   color.Color
	width float64
}

// cumulativePanel is the upper panel: messages sent (first attempts),
// acked (when any were) and delivered so far, with a title giving the
// totals.
func cumulativePanel(m scenario.ModeResult) panel {
	d := m.Series
	sec := d.BucketMS / 1000
	sent := firstAttempts(d)
	pn := panel{p: newPanel(), top: 1}
	pn.lines = append(pn.lines, panelLine{"sent (first attempts)", cumulative(sent, sec), colSent, 3.5})
	if total(d.Acked) > 0 {
		pn.lines = append(pn.lines, panelLine{"acked (basic.ack)", cumulative(d.Acked, sec), colAcked, 1.5})
	}
	pn.lines = append(pn.lines, panelLine{deliveredLine(m), cumulative(d.Delivered, sec), colDelivered, 2.5})
	for _, l := range pn.lines {
		pn.top = math.Max(pn.top, l.xys[len(l.xys)-1].Y)
	}
	pn.top *= 1.08 // room above the highest line
	pn.p.Title.Text = fmt.Sprintf("%s — cumulative messages: %s sent, %s delivered", label(m), num(total(sent)), num(m.Delivered))
	if n := total(d.Delivered); n != m.Delivered {
		pn.p.Title.Text += fmt.Sprintf(" (%s deliveries)", num(n))
	}
	pn.p.Y.Label.Text = "messages"
	return pn
}

// deliveredLine names the delivered line: the series counts deliveries,
// duplicates and redeliveries included, while "delivered" in the headline,
// the tables and result.json counts distinct ids; when the two differ the
// line says deliveries, so a duplicate is not read as a lost order found.
func deliveredLine(m scenario.ModeResult) string {
	if m.Series != nil && total(m.Series.Delivered) != m.Delivered {
		return "deliveries (duplicates included)"
	}
	return "delivered"
}

// ratesPanel is the lower panel: published, acked (when any were) and
// delivered msg/s per bucket on rateScale's scale, with a title saying
// where the drain's deliveries were clipped.
func ratesPanel(m scenario.ModeResult) panel {
	d := m.Series
	sec := d.BucketMS / 1000
	drainMS := -1.0
	for _, e := range m.Events {
		if e.Kind == metrics.EvDrainStart {
			drainMS = e.AtMS
			break
		}
	}
	top, peak := rateScale(d, drainMS)
	pn := panel{p: newPanel(), top: top * 1.08}
	pn.lines = append(pn.lines, panelLine{"published msg/s (with republishes)", rateXYs(d.Published, sec, top), colSent, 1.5})
	if total(d.Acked) > 0 {
		pn.lines = append(pn.lines, panelLine{"acked msg/s", rateXYs(d.Acked, sec, top), colAcked, 1.5})
	}
	pn.lines = append(pn.lines, panelLine{"delivered msg/s", rateXYs(d.Delivered, sec, top), colDelivered, 1.5})
	pn.p.Title.Text = fmt.Sprintf("msg/s per %s ms bucket", strconv.FormatFloat(d.BucketMS, 'f', -1, 64))
	if peak > top {
		pn.p.Title.Text += fmt.Sprintf("; delivered clipped at %s msg/s (the drain peaked at %s msg/s)", rate(top), rate(peak))
	}
	pn.p.Y.Label.Text = "msg/s"
	pn.p.X.Label.Text = "s since burst start"
	return pn
}

// fill adds to the panel, in drawing order, the broker state shading, the
// grid, its lines and the marks, over x from 0 to xMax s. It adds
// the lines to legend, and the states and marks too when states is true.
func (pn panel) fill(legend *plot.Legend, states bool, spans []metrics.StateSpan, marks []mark, xMax float64) error {
	lg := legend
	if !states {
		lg = nil
	}
	if err := addStateBands(pn.p, lg, spans, pn.top); err != nil {
		return err
	}
	pn.p.Add(plotter.NewGrid())
	for _, s := range pn.lines {
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = s.col, vg.Points(s.width)
		pn.p.Add(l)
		legend.Add(s.name, l)
	}
	if err := addMarks(pn.p, lg, marks, pn.top); err != nil {
		return err
	}
	pn.p.X.Min, pn.p.X.Max = 0, xMax
	pn.p.Y.Min, pn.p.Y.Max = 0, pn.top
	return nil
}

// newPanel is a panel's frame: plain numbers on the axes (the default
// ticks print "50000.00") and no legend of its own.
func newPanel() *plot.Plot {
	p := plot.New()
	plain := plot.TickerFunc(func(min, max float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
			}
		}
		return ticks
	})
	p.X.Tick.Marker, p.Y.Tick.Marker = plain, plain
	return p
}

// total is the sum of counts.
func total(counts []int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// firstAttempts is each bucket's publishes of ids not published before:
// Published minus Republished (Published alone for results that predate
// Republished).
func firstAttempts(d *metrics.SeriesData) []int {
	out := slices.Clone(d.Published)
	if len(d.Republished) == len(out) {
		for i, r := range d.Republished {
			out[i] -= r
		}
	}
	return out
}

// cumulative is the running total of counts (buckets of sec seconds) as
// points at each bucket's end, from (0, 0): the count so far at each time.
func cumulative(counts []int, sec float64) plotter.XYs {
	xy := make(plotter.XYs, len(counts)+1)
	n := 0
	for i, c := range counts {
		n += c
		xy[i+1] = plotter.XY{X: float64(i+1) * sec, Y: float64(n)}
	}
	return xy
}

// rateXYs is counts (buckets of sec seconds) as msg/s at the bucket
// centres, each clipped to top.
func rateXYs(counts []int, sec, top float64) plotter.XYs {
	xy := make(plotter.XYs, len(counts))
	for i, c := range counts {
		xy[i] = plotter.XY{X: (float64(i) + 0.5) * sec, Y: math.Min(float64(c)/sec, top)}
	}
	return xy
}

// rateScale returns the rates panel's top, in msg/s: the highest published
// or acked rate of any bucket and the highest delivered rate of the buckets
// that end by drainMS (the drain's start; every bucket when negative), at
// least 1; and peak, the highest delivered rate of any bucket. The drain
// reads the whole queue at once, tens of times faster than it was
// published: scaled to it, publishing would be a flat line.
func rateScale(d *metrics.SeriesData, drainMS float64) (top, peak float64) {
	sec := d.BucketMS / 1000
	top = 1
	for i := range d.Len() {
		top = math.Max(top, float64(max(d.Published[i], at(d.Acked, i)))/sec)
		r := float64(at(d.Delivered, i)) / sec
		peak = math.Max(peak, r)
		if drainMS < 0 || float64(i+1)*d.BucketMS <= drainMS {
			top = math.Max(top, r)
		}
	}
	return top, peak
}

// at is s[i], or 0 past its end.
func at(s []int, i int) int {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// shadeSpans are the stretches to shade, in ms: the series' exact States
// when it has them; else (results written before States existed) each run
// of buckets in a state other than up, begun at the first fault event
// within its first bucket if there is one (a bucket is marked with the
// worst state during it, so shading it whole would start before the fault).
func shadeSpans(d *metrics.SeriesData, events []metrics.Event) []metrics.StateSpan {
	if len(d.States) > 0 {
		return d.States
	}
	var out []metrics.StateSpan
	for i := 0; i < d.Len(); {
		st := d.Broker[i]
		j := i
		for j < d.Len() && d.Broker[j] == st {
			j++
		}
		if st != metrics.StateUp {
			from, to := float64(i)*d.BucketMS, float64(j)*d.BucketMS
			for _, e := range events {
				if e.Kind == metrics.EvFault && e.AtMS >= from && e.AtMS < from+d.BucketMS {
					from = e.AtMS
					break
				}
			}
			out = append(out, metrics.StateSpan{FromMS: from, ToMS: to, State: st})
		}
		i = j
	}
	return out
}

// addStateBands shades each span up to height top, and adds each state to
// lg (when not nil) once.
func addStateBands(p *plot.Plot, lg *plot.Legend, spans []metrics.StateSpan, top float64) error {
	seen := map[metrics.BrokerState]bool{}
	for _, sp := range spans {
		x0, x1 := sp.FromMS/1000, sp.ToMS/1000
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: top}, {X: x0, Y: top}})
		if err != nil {
			return err
		}
		poly.Color = stateColors[sp.State]
		poly.LineStyle.Width = 0
		p.Add(poly)
		if lg != nil && !seen[sp.State] {
			seen[sp.State] = true
			lg.Add("broker "+string(sp.State), poly)
		}
	}
	return nil
}

// markKind is a kind of vertical mark, in legend order.
type markKind int

const (
	markFault markKind = iota
	markRecovery
	markReconnect
	markRepublish
	markDrain
)

// markStyles are each kind's legend text, colour and dashes (points).
var markStyles = []struct {
	name   string
	col    color.Color
	dashes []float64
}{
	markFault:     {"fault", colFault, []float64{5, 3}},
	markRecovery:  {"broker accepting AMQP", colRecovery, []float64{5, 3}},
	markReconnect: {"publisher reconnected", colReconnect, []float64{2, 2}},
	markRepublish: {"republish", colRepublish, []float64{6, 2, 1, 2}},
	markDrain:     {"drain start", colDrain, []float64{1, 3}},
}

// mark is a vertical mark at MS ms since the burst start; action names a
// fault's action.
type mark struct {
	MS     float64
	Kind   markKind
	Action string
}

// chartMarks lists the marks of a mode's timeline, in event order: faults,
// the broker accepting AMQP logins again, publisher reconnects (a
// publisher's second or later connection; for results that do not number
// connections, any publisher connection after a fault), the drain's start,
// then the start of each run of buckets with republishes (at the bucket's
// start) and each confirm-timeout republish.
func chartMarks(d *metrics.SeriesData, events []metrics.Event) []mark {
	var out []mark
	faulted := false
	for _, e := range events {
		switch e.Kind {
		case metrics.EvFault:
			faulted = true
			out = append(out, mark{e.AtMS, markFault, e.Action})
		case metrics.EvBrokerReady:
			out = append(out, mark{MS: e.AtMS, Kind: markRecovery})
		case metrics.EvConnected:
			if e.Connection > 1 || (e.Connection == 0 && faulted) {
				out = append(out, mark{MS: e.AtMS, Kind: markReconnect})
			}
		case metrics.EvConfirmTimeout:
			out = append(out, mark{MS: e.AtMS, Kind: markRepublish})
		case metrics.EvDrainStart:
			out = append(out, mark{MS: e.AtMS, Kind: markDrain})
		}
	}
	for i, r := range d.Republished {
		if r > 0 && (i == 0 || d.Republished[i-1] == 0) {
			out = append(out, mark{MS: float64(i) * d.BucketMS, Kind: markRepublish})
		}
	}
	return out
}

// addMarks draws each mark as a dashed vertical line up to top, and adds
// each kind to lg (when not nil) once, faults with their actions.
func addMarks(p *plot.Plot, lg *plot.Legend, marks []mark, top float64) error {
	var actions []string
	for _, mk := range marks {
		if mk.Kind == markFault && !slices.Contains(actions, mk.Action) {
			actions = append(actions, mk.Action)
		}
	}
	seen := map[markKind]bool{}
	for _, mk := range marks {
		st := markStyles[mk.Kind]
		x := mk.MS / 1000
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return err
		}
		l.Color, l.Width = st.col, vg.Points(1.5)
		for _, dash := range st.dashes {
			l.Dashes = append(l.Dashes, vg.Points(dash))
		}
		p.Add(l)
		if lg != nil && !seen[mk.Kind] {
			seen[mk.Kind] = true
			name := st.name
			if mk.Kind == markFault && len(actions) > 0 {
				name += ": " + strings.Join(actions, ", ")
			}
			lg.Add(name, l)
		}
	}
	return nil
}

// chartLink is a markdown link to mode i's SVG chart, relative to report.md.
func chartLink(i int, m scenario.ModeResult) string {
	return fmt.Sprintf("[%s](%s)", ChartFile(i, m), ChartFile(i, m))
}

// timelineSection writes a mode's chart, a link to its SVG and its faults'
// recovery timings into report.md.
func timelineSection(w io.Writer, i int, m scenario.ModeResult) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	if m.Series != nil && m.Series.Len() > 0 {
		p("\n### Timeline\n\n")
		if err := writeMermaid(w, m); err != nil {
			return err
		}
		second := "second line messages delivered, both cumulative: the gap between them is what was never delivered"
		if deliveredLine(m) != "delivered" {
			second = fmt.Sprintf("second line deliveries, both cumulative (%s deliveries of %s distinct orders: duplicates and redeliveries count again, so the gap understates what was never delivered)", num(total(m.Series.Delivered)), num(m.Delivered))
		}
		p("\nBars: buckets in which the broker was down, paused, disconnected or blocked; first line messages sent (first attempts), %s. "+
			"The full chart, %s, with acks, msg/s and marks for faults, reconnects, republishes and recovery, is an SVG file in the run's folder beside this report (a CI job summary cannot show it: keep the folder as an artifact). Counts per bucket are in result.json (`series`).\n", second, chartLink(i, m))
	}
	var rows [][]string
	cluster := false
	for _, f := range m.Faults {
		cluster = cluster || f.Target != ""
	}
	for _, f := range m.Faults {
		r := f.Recovery
		if r == nil {
			continue
		}
		opt := func(v *float64) string {
			if v == nil {
				return "-"
			}
			return ms(*v)
		}
		row := []string{string(f.Action), opt(r.ContainerRunningMS), opt(r.AMQPAcceptingMS), opt(r.PublisherReconnectedMS), opt(r.FirstConfirmMS), opt(r.BacklogDrainedMS)}
		if cluster {
			row = append(row, clusterRecovery(r, opt)...)
		}
		rows = append(rows, row)
	}
	if err := nodeLines(w, m); err != nil || rows == nil {
		return err
	}
	p("\nRecovery, ms since the fault was applied (- did not happen):\n\n")
	header := []string{"fault", "container running", "AMQP accepting", "publisher reconnected", "first confirm", "backlog drained"}
	if cluster {
		header = append(header, "new leader seen", "queue replicated")
	}
	return table(w, true, header, rows)
}

package reports

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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
	widthMS          float64
	published, acked []int
	notUp            []bool
}

func merge(d *metrics.SeriesData, maxPoints int) merged {
	factor := (d.Len() + maxPoints - 1) / maxPoints
	factor = max(factor, 1)
	n := (d.Len() + factor - 1) / factor
	m := merged{widthMS: d.BucketMS * float64(factor), published: make([]int, n), acked: make([]int, n), notUp: make([]bool, n)}
	for i := range d.Len() {
		j := i / factor
		m.published[j] += d.Published[i]
		m.acked[j] += d.Acked[i]
		if d.Broker[i] != metrics.StateUp {
			m.notUp[j] = true
		}
	}
	return m
}

// perSecond is a bucket count as msg/s, rounded.
func perSecond(n int, widthMS float64) int { return int(math.Round(float64(n) * 1000 / widthMS)) }

// Mermaid writes the mode's series as a fenced mermaid xychart-beta block
// (GitHub renders it): a bar at full height for each bucket in which the
// broker was not up (down, paused, disconnected or blocked), then lines of
// published and acked msg/s. It writes nothing without a series, and returns
// the first error writing to w.
func Mermaid(w io.Writer, m scenario.ModeResult) error {
	return sticky(w, func(w io.Writer) error { return writeMermaid(w, m) })
}

func writeMermaid(w io.Writer, m scenario.ModeResult) error {
	d := m.Series
	if d == nil || d.Len() == 0 || d.BucketMS <= 0 {
		return nil
	}
	g := merge(d, maxMermaidPoints)
	n := len(g.published)
	xs := make([]string, n)
	bars, pub, conf := make([]string, n), make([]string, n), make([]string, n)
	top := 1
	for i := range n {
		top = max(top, perSecond(g.published[i], g.widthMS), perSecond(g.acked[i], g.widthMS))
	}
	for i := range n {
		xs[i] = strconv.FormatFloat(float64(i)*g.widthMS/1000, 'f', -1, 64)
		pub[i] = strconv.Itoa(perSecond(g.published[i], g.widthMS))
		conf[i] = strconv.Itoa(perSecond(g.acked[i], g.widthMS))
		bars[i] = "0"
		if g.notUp[i] {
			bars[i] = strconv.Itoa(top)
		}
	}
	_, err := fmt.Fprintf(w, "```mermaid\n%%%%{init: {\"themeVariables\": {\"xyChart\": {\"plotColorPalette\": \"#f2b8b5, #1f77b4, #2ca02c\"}}}}%%%%\nxychart-beta\n"+
		"    title \"%s: msg/s per %s ms (bars: broker not up)\"\n"+
		"    x-axis \"s since burst start\" [%s]\n"+
		"    y-axis \"msg/s\" 0 --> %d\n"+
		"    bar [%s]\n"+
		"    line [%s]\n"+
		"    line [%s]\n```\n",
		label(m), strconv.FormatFloat(g.widthMS, 'f', -1, 64), strings.Join(xs, ", "), top,
		strings.Join(bars, ", "), strings.Join(pub, ", "), strings.Join(conf, ", "))
	return err
}

var (
	colPublished = color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	colAcked     = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
	colDelivered = color.RGBA{0x94, 0x67, 0xbd, 0xff}
	colFault     = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	// Translucent (non-premultiplied) so grid and lines show through.
	stateColors = map[metrics.BrokerState]color.Color{
		metrics.StateDown:         color.NRGBA{0xd6, 0x27, 0x28, 0x40},
		metrics.StateDisconnected: color.NRGBA{0xff, 0x7f, 0x0e, 0x40},
		metrics.StatePaused:       color.NRGBA{0x7f, 0x7f, 0x7f, 0x40},
		metrics.StateBlocked:      color.NRGBA{0xbc, 0xbd, 0x22, 0x50},
	}
)

// SVG writes the mode's timeline as an SVG chart (gonum.org/v1/plot):
// published, acked and delivered msg/s per bucket against seconds since
// the burst start, shaded stretches where the broker was down, paused,
// disconnected or blocked, and a dashed red line at each fault event. It
// returns an error when the mode has no series, and the first error writing
// to w.
func SVG(w io.Writer, m scenario.ModeResult) error {
	return sticky(w, func(w io.Writer) error { return renderChart(w, m, "svg") })
}

// renderChart draws mode m's timeline in format (svg, png, pdf…, see
// plot.WriterTo): axes, then shaded broker states, then the rate lines, then
// the fault marks, so each layer is drawn over the one before.
func renderChart(w io.Writer, m scenario.ModeResult, format string) error {
	d := m.Series
	if d == nil || d.Len() == 0 || d.BucketMS <= 0 {
		return fmt.Errorf("%s: no series to chart", label(m))
	}
	p := newChartPlot(m)
	sec := d.BucketMS / 1000
	lines := []chartSeries{{"published", d.Published, colPublished}, {"acked", d.Acked, colAcked}, {"delivered", d.Delivered, colDelivered}}
	xys, top := seriesRates(lines, sec)
	top *= 1.25 // room for the legend and the fault labels

	// Broker states first, so the lines are drawn over them.
	if err := addStateBands(p, d, sec, top); err != nil {
		return err
	}
	if err := addSeriesLines(p, lines, xys); err != nil {
		return err
	}
	if err := addFaultMarks(p, m.Events, top); err != nil {
		return err
	}
	p.X.Min, p.X.Max = 0, float64(d.Len())*sec
	p.Y.Min, p.Y.Max = 0, top
	p.Add(plotter.NewGrid())
	wt, err := p.WriterTo(10*vg.Inch, 4*vg.Inch, format)
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// newChartPlot is the chart's frame: title, axis labels, whole-number msg/s
// ticks and the legend at the top.
func newChartPlot(m scenario.ModeResult) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — msg/s per %s ms bucket", label(m), strconv.FormatFloat(m.Series.BucketMS, 'f', -1, 64))
	p.X.Label.Text = "s since burst start"
	p.Y.Label.Text = "msg/s"
	// Whole msg/s on the axis (the default ticks print "50000.00").
	p.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
			}
		}
		return ticks
	})
	p.Legend.Top = true
	return p
}

// chartSeries is one rate line of the chart: per-bucket counts drawn as msg/s.
type chartSeries struct {
	name   string
	counts []int
	col    color.Color
}

// seriesRates turns each line's per-bucket counts into msg/s points at the
// bucket centres (x in s; buckets of sec seconds), and returns the highest
// rate, at least 1.
func seriesRates(lines []chartSeries, sec float64) ([]plotter.XYs, float64) {
	top := 1.0
	xys := make([]plotter.XYs, len(lines))
	for i, s := range lines {
		xy := make(plotter.XYs, len(s.counts))
		for j, c := range s.counts {
			xy[j].X = (float64(j) + 0.5) * sec
			xy[j].Y = float64(c) / sec
			top = math.Max(top, xy[j].Y)
		}
		xys[i] = xy
	}
	return xys, top
}

// addStateBands shades each run of buckets in which the broker was not up,
// up to height top, and adds each state to the legend once.
func addStateBands(p *plot.Plot, d *metrics.SeriesData, sec, top float64) error {
	seen := map[metrics.BrokerState]bool{}
	for i := 0; i < d.Len(); {
		st := d.Broker[i]
		j := i
		for j < d.Len() && d.Broker[j] == st {
			j++
		}
		if st != metrics.StateUp {
			x0, x1 := float64(i)*sec, float64(j)*sec
			poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: top}, {X: x0, Y: top}})
			if err != nil {
				return err
			}
			poly.Color = stateColors[st]
			poly.LineStyle.Width = 0
			p.Add(poly)
			if !seen[st] {
				seen[st] = true
				p.Legend.Add("broker "+string(st), poly)
			}
		}
		i = j
	}
	return nil
}

// addSeriesLines draws each rate line with its legend entry.
func addSeriesLines(p *plot.Plot, lines []chartSeries, xys []plotter.XYs) error {
	for i, s := range lines {
		l, err := plotter.NewLine(xys[i])
		if err != nil {
			return err
		}
		l.Color = s.col
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	return nil
}

// addFaultMarks draws a dashed red line up to top at each fault event,
// labelled with its action near the top.
func addFaultMarks(p *plot.Plot, events []metrics.Event, top float64) error {
	var marks plotter.XYLabels
	for _, e := range events {
		if e.Kind != metrics.EvFault {
			continue
		}
		x := e.AtMS / 1000
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return err
		}
		l.Color, l.Dashes = colFault, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		marks.XYs = append(marks.XYs, plotter.XY{X: x, Y: top * 0.97})
		marks.Labels = append(marks.Labels, " fault: "+e.Action)
	}
	if len(marks.XYs) == 0 {
		return nil
	}
	lbl, err := plotter.NewLabels(marks)
	if err != nil {
		return err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].Color = colFault
	}
	p.Add(lbl)
	return nil
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
		p("\nBars: buckets in which the broker was down, paused, disconnected or blocked; first line published msg/s (republishes included), second line acked msg/s (basic.acks received; none in fire-and-forget). Full chart with deliveries and fault marks: [%s](%s). Counts per bucket are in result.json (`series`).\n", ChartFile(i, m), ChartFile(i, m))
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

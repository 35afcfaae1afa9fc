package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func chartMode() scenario.ModeResult {
	up, down, blocked := metrics.StateUp, metrics.StateDown, metrics.StateBlocked
	v := func(x float64) *float64 { return &x }
	m := scenario.ModeResult{
		Mode: scenario.ConfirmWindow,
		Series: &metrics.SeriesData{
			BucketMS:    250,
			Published:   []int{10, 20, 0, 0, 5, 5},
			Acked:       []int{5, 20, 0, 0, 0, 10},
			Nacked:      make([]int, 6),
			Returned:    make([]int, 6),
			Delivered:   []int{0, 0, 0, 0, 0, 30},
			InFlight:    []int{5, 0, 0, 0, 5, 0},
			Reconnects:  []int{0, 0, 0, 1, 0, 0},
			Broker:      []metrics.BrokerState{up, down, down, up, up, blocked},
			Republished: []int{0, 0, 0, 0, 5, 0},
		},
		Events: []metrics.Event{
			{AtMS: 0, Kind: metrics.EvConnected, Publisher: 1, Connection: 1},
			{AtMS: 300, Kind: metrics.EvFault, Action: "kill", Detail: "kill SIGKILL (Docker API call returned)"},
			{AtMS: 700, Kind: metrics.EvBrokerReady},
			{AtMS: 800, Kind: metrics.EvConnected, Publisher: 1, Connection: 2},
			{AtMS: 1250, Kind: metrics.EvDrainStart},
		},
		Faults: []scenario.FaultRecord{{Action: scenario.Kill, Recovery: &scenario.Recovery{ContainerRunningMS: v(250.5), AMQPAcceptingMS: v(400)}}},
	}
	m.Delivered = 30 // distinct ids, as the series' 30 deliveries
	return m
}

// TestChartDeliveriesWithDuplicates: the series counts deliveries
// (duplicates included), result.json's delivered counts distinct ids; a
// chart of a mode with duplicates gives the distinct count as "delivered",
// as the headline does, and names its line deliveries, in the SVG and in
// the mermaid block.
func TestChartDeliveriesWithDuplicates(t *testing.T) {
	m := chartMode()
	m.Delivered, m.Duplicates = 28, 2
	var svg, mermaid bytes.Buffer
	if err := SVG(&svg, m); err != nil {
		t.Fatal(err)
	}
	if err := Mermaid(&mermaid, m); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"35 sent, 28 delivered (30 deliveries)", "deliveries (duplicates included)"} {
		if !strings.Contains(svg.String(), w) {
			t.Errorf("SVG lacks %q", w)
		}
	}
	if w := `title "confirm-window: messages sent vs deliveries (duplicates included), cumulative (bars: broker not up)"`; !strings.Contains(mermaid.String(), w) {
		t.Errorf("mermaid lacks %q:\n%s", w, mermaid.String())
	}
	var md bytes.Buffer
	if err := timelineSection(&md, 0, m); err != nil {
		t.Fatal(err)
	}
	if w := "second line deliveries, both cumulative (30 deliveries of 28 distinct orders: duplicates and redeliveries count again, so the gap understates what was never delivered)."; !strings.Contains(md.String(), w) {
		t.Errorf("report.md's chart caption lacks %q:\n%s", w, md.String())
	}
}

// The mermaid block for a constructed series, pinned: messages sent (first
// attempts: the 5 republished at 1–1.25 s are not counted again) and
// delivered so far at each bucket's end; full-height bars where the broker
// was not up, a tenth above the highest line (35 → 39).
func TestMermaid(t *testing.T) {
	var b bytes.Buffer
	if err := Mermaid(&b, chartMode()); err != nil {
		t.Fatal(err)
	}
	want := "```mermaid\n" +
		`%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "#f2b8b5, #1f77b4, #9467bd"}}}}%%` + "\n" +
		"xychart-beta\n" +
		`    title "confirm-window: messages sent vs delivered, cumulative (bars: broker not up)"` + "\n" +
		`    x-axis "s since burst start" [0.25, 0.5, 0.75, 1, 1.25, 1.5]` + "\n" +
		`    y-axis "messages" 0 --> 39` + "\n" +
		"    bar [0, 39, 39, 0, 0, 39]\n" +
		"    line [10, 30, 30, 30, 30, 35]\n" +
		"    line [0, 0, 0, 0, 0, 30]\n" +
		"```\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := Mermaid(&b, scenario.ModeResult{}); err != nil || b.Len() != 0 {
		t.Errorf("no series: %q %v", b.String(), err)
	}
}

// A long series is merged into at most maxMermaidPoints buckets: 130
// buckets of 250 ms become 44 of 750 ms, the last holding one bucket.
func TestMergeLongSeries(t *testing.T) {
	d := &metrics.SeriesData{BucketMS: 250, Published: make([]int, 130), Delivered: make([]int, 130), Broker: make([]metrics.BrokerState, 130)}
	for i := range 130 {
		d.Published[i], d.Broker[i] = 1, metrics.StateUp
	}
	d.Delivered[129] = 7
	d.Broker[129] = metrics.StatePaused
	g := merge(d, maxMermaidPoints)
	if len(g.sent) != 44 || g.widthMS != 750 || g.sent[0] != 3 || g.sent[43] != 1 || g.delivered[43] != 7 || !g.notUp[43] || g.notUp[42] {
		t.Errorf("merged: %d points of %g ms, first %d, last %d/%d, notUp %v", len(g.sent), g.widthMS, g.sent[0], g.sent[43], g.delivered[43], g.notUp[42:])
	}
}

// The series math of the chart, exact.
func TestChartSeriesMath(t *testing.T) {
	d := chartMode().Series
	if got, want := firstAttempts(d), []int{10, 20, 0, 0, 0, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("first attempts %v, want %v", got, want)
	}
	// Results written before Republished existed: Published as is.
	old := *d
	old.Republished = nil
	if got := firstAttempts(&old); !reflect.DeepEqual(got, d.Published) {
		t.Errorf("first attempts without republished %v", got)
	}
	if got, want := cumulative([]int{10, 20, 0, 5}, 0.25), (plotter.XYs{{X: 0, Y: 0}, {X: 0.25, Y: 10}, {X: 0.5, Y: 30}, {X: 0.75, Y: 30}, {X: 1, Y: 35}}); !reflect.DeepEqual(got, want) {
		t.Errorf("cumulative %v, want %v", got, want)
	}
	// 30 deliveries in 250 ms are 120 msg/s, clipped to 80.
	if got, want := rateXYs([]int{5, 30}, 0.25, 80), (plotter.XYs{{X: 0.125, Y: 20}, {X: 0.375, Y: 80}}); !reflect.DeepEqual(got, want) {
		t.Errorf("rates %v, want %v", got, want)
	}
	// Published peaks at 80 msg/s (20 in a bucket), acked too; the drain
	// starts at 1250 ms, so bucket 5's 120 deliveries/s are left out of the
	// scale and reported as the peak.
	if top, peak := rateScale(d, 1250); top != 80 || peak != 120 {
		t.Errorf("rate scale with a drain: top %g peak %g, want 80 120", top, peak)
	}
	// Without a drain (live consumers only), every delivery counts.
	if top, peak := rateScale(d, -1); top != 120 || peak != 120 {
		t.Errorf("rate scale without a drain: top %g peak %g, want 120 120", top, peak)
	}
	// A silent series still has a scale.
	if top, peak := rateScale(&metrics.SeriesData{BucketMS: 250, Published: []int{0}}, -1); top != 1 || peak != 0 {
		t.Errorf("silent series: top %g peak %g", top, peak)
	}
}

// The shading starts where the fault took effect, not at the start of the
// bucket the fault fell in.
func TestShadeSpans(t *testing.T) {
	m := chartMode()
	// A result without exact states: runs of buckets, the first begun at the
	// fault event inside it (300 ms, in the bucket 250–500 ms); the blocked
	// bucket has no fault, so it is shaded whole.
	want := []metrics.StateSpan{{FromMS: 300, ToMS: 750, State: metrics.StateDown}, {FromMS: 1250, ToMS: 1500, State: metrics.StateBlocked}}
	if got := shadeSpans(m.Series, m.Events); !reflect.DeepEqual(got, want) {
		t.Errorf("spans from buckets %+v, want %+v", got, want)
	}
	// Exact states win.
	m.Series.States = []metrics.StateSpan{{FromMS: 301.5, ToMS: 700, State: metrics.StateDown}}
	if got := shadeSpans(m.Series, m.Events); !reflect.DeepEqual(got, m.Series.States) {
		t.Errorf("spans from states %+v", got)
	}
	// And a series marked by the engine carries them: a kill at 900 ms in
	// 1 s buckets marks bucket 0 down, shaded from 900 ms.
	d := &metrics.SeriesData{BucketMS: 1000, Published: make([]int, 3), Reconnects: make([]int, 3), Broker: []metrics.BrokerState{"up", "up", "up"}}
	d.Mark([]metrics.StateSpan{{FromMS: 900, ToMS: 2500, State: metrics.StateDown}}, nil)
	if !reflect.DeepEqual(d.Broker, []metrics.BrokerState{"down", "down", "down"}) {
		t.Errorf("buckets %v", d.Broker)
	}
	if got := shadeSpans(d, nil); !reflect.DeepEqual(got, []metrics.StateSpan{{FromMS: 900, ToMS: 2500, State: metrics.StateDown}}) {
		t.Errorf("spans from marked series %+v", got)
	}
}

// Marks: the fault, the broker back, the reconnect (second connection;
// the first is not one), the drain, then the republish at the start of its
// bucket.
func TestChartMarks(t *testing.T) {
	m := chartMode()
	want := []mark{{300, markFault, "kill"}, {700, markRecovery, ""}, {800, markReconnect, ""}, {1250, markDrain, ""}, {1000, markRepublish, ""}}
	if got := chartMarks(m.Series, m.Events); !reflect.DeepEqual(got, want) {
		t.Errorf("marks %+v\nwant %+v", got, want)
	}
	// Results that do not number connections: a connection after a fault
	// is a reconnect.
	ev := []metrics.Event{{AtMS: 5, Kind: metrics.EvConnected}, {AtMS: 10, Kind: metrics.EvFault, Action: "pause"}, {AtMS: 20, Kind: metrics.EvConnected}}
	if got := chartMarks(&metrics.SeriesData{BucketMS: 250}, ev); !reflect.DeepEqual(got, []mark{{10, markFault, "pause"}, {20, markReconnect, ""}}) {
		t.Errorf("marks without connection numbers %+v", got)
	}
}

// The SVG is well-formed XML and names its series, the broker states it
// shades and the fault it marks.
func TestSVG(t *testing.T) {
	var b bytes.Buffer
	if err := SVG(&b, chartMode()); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	var text []string
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tk.Name.Local
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(tk)); s != "" {
				text = append(text, s)
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	all := strings.Join(text, "|")
	for _, w := range []string{"sent (first attempts)", "acked (basic.ack)", "delivered", "published msg/s", "broker down", "broker blocked", "fault: kill",
		"broker accepting AMQP", "publisher reconnected", "republish", "drain start", "s since burst start", "msg/s", "messages",
		"delivered clipped at 80 msg/s (the drain peaked at 120 msg/s)", "confirm-window — cumulative messages: 35 sent, 30 delivered"} {
		if !strings.Contains(all, w) {
			t.Errorf("SVG text lacks %q: %s", w, all)
		}
	}
	if err := SVG(io.Discard, scenario.ModeResult{Mode: scenario.ConfirmEach}); err == nil {
		t.Error("no series: want an error")
	}
}

// The markdown report carries the chart, the link to the SVG and the
// recovery table.
func TestMarkdownTimeline(t *testing.T) {
	var b bytes.Buffer
	r := &scenario.Result{Scenario: "s", Modes: []scenario.ModeResult{{Mode: scenario.FireAndForget}, chartMode()}}
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, w := range []string{
		"```mermaid\n",
		"[timeline-2-confirm-window.svg](timeline-2-confirm-window.svg)",
		"keep the folder as an artifact",
		"| kill  |               251 |            400 |                     - |             - |               - |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q:\n%s", w, md)
		}
	}
	if strings.Count(md, "```mermaid") != 1 {
		t.Error("a mode without a series has no chart")
	}
}

// A series longer than a chart can show is drawn regrouped, and its title
// says by how much: 100,000 buckets of 1 ms become 2,000 of 50 ms.
func TestSVGLongSeriesRegrouped(t *testing.T) {
	const n = 100_000
	ones := func() []int {
		s := make([]int, n)
		for i := range s {
			s[i] = 1
		}
		return s
	}
	broker := make([]metrics.BrokerState, n)
	for i := range broker {
		broker[i] = metrics.StateUp
	}
	m := scenario.ModeResult{Mode: scenario.ConfirmEach, Series: &metrics.SeriesData{BucketMS: 1,
		Published: ones(), Acked: ones(), Nacked: make([]int, n), Returned: make([]int, n), Delivered: ones(),
		InFlight: make([]int, n), Reconnects: make([]int, n), Broker: broker}}
	m.Delivered = n
	var b bytes.Buffer
	if err := SVG(&b, m); err != nil {
		t.Fatal(err)
	}
	if want := "msg/s per 50 ms bucket (50 buckets of 1 ms each)"; !strings.Contains(b.String(), want) {
		t.Errorf("SVG lacks %q", want)
	}
	if want := "cumulative messages: 100,000 sent, 100,000 delivered"; !strings.Contains(b.String(), want) {
		t.Errorf("SVG lacks %q", want)
	}
}

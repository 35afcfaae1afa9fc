package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func chartMode() scenario.ModeResult {
	up, down, blocked := metrics.StateUp, metrics.StateDown, metrics.StateBlocked
	v := func(x float64) *float64 { return &x }
	return scenario.ModeResult{
		Mode: scenario.ConfirmWindow,
		Series: &metrics.SeriesData{
			BucketMS:   250,
			Published:  []int{10, 20, 0, 0, 5, 5},
			Acked:      []int{5, 20, 0, 0, 0, 10},
			Nacked:     make([]int, 6),
			Returned:   make([]int, 6),
			Delivered:  []int{0, 0, 0, 0, 0, 30},
			InFlight:   []int{5, 0, 0, 0, 5, 0},
			Reconnects: []int{0, 0, 0, 1, 0, 0},
			Broker:     []metrics.BrokerState{up, down, down, up, up, blocked},
		},
		Events: []metrics.Event{{AtMS: 300, Kind: metrics.EvFault, Action: "kill", Detail: "kill SIGKILL (Docker API call returned)"}},
		Faults: []scenario.FaultRecord{{Action: scenario.Kill, Recovery: &scenario.Recovery{ContainerRunningMS: v(250.5), AMQPAcceptingMS: v(400)}}},
	}
}

// The mermaid block for a constructed series, pinned: 4 msg/s per message
// in a 250 ms bucket; full-height bars where the broker was not up.
func TestMermaid(t *testing.T) {
	var b bytes.Buffer
	if err := Mermaid(&b, chartMode()); err != nil {
		t.Fatal(err)
	}
	want := "```mermaid\n" +
		`%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "#f2b8b5, #1f77b4, #2ca02c"}}}}%%` + "\n" +
		"xychart-beta\n" +
		`    title "confirm-window: msg/s per 250 ms (bars: broker not up)"` + "\n" +
		`    x-axis "s since burst start" [0, 0.25, 0.5, 0.75, 1, 1.25]` + "\n" +
		`    y-axis "msg/s" 0 --> 80` + "\n" +
		"    bar [0, 80, 80, 0, 0, 80]\n" +
		"    line [40, 80, 0, 0, 20, 20]\n" +
		"    line [20, 80, 0, 0, 0, 40]\n" +
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
	d := &metrics.SeriesData{BucketMS: 250, Published: make([]int, 130), Acked: make([]int, 130), Broker: make([]metrics.BrokerState, 130)}
	for i := range 130 {
		d.Published[i], d.Broker[i] = 1, metrics.StateUp
	}
	d.Broker[129] = metrics.StatePaused
	g := merge(d, maxMermaidPoints)
	if len(g.published) != 44 || g.widthMS != 750 || g.published[0] != 3 || g.published[43] != 1 || !g.notUp[43] || g.notUp[42] {
		t.Errorf("merged: %d points of %g ms, first %d, last %d, notUp %v", len(g.published), g.widthMS, g.published[0], g.published[43], g.notUp[42:])
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
	for _, w := range []string{"published", "acked", "delivered", "broker down", "broker blocked", "fault: kill", "s since burst start", "msg/s"} {
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

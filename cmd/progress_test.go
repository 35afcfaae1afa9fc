package cmd

import (
	"bytes"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func TestProgressLine(t *testing.T) {
	got := progressLine(scenario.ConfirmWindow, 12345*time.Millisecond,
		metrics.SeriesTotals{Published: 10500, Acked: 9000, InFlight: 1000}, 12430.4, metrics.StateDown)
	want := "confirm-window   12.3s  published 10,500  acked 9,000  in flight 1,000  12,430 msg/s  broker down"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Not a terminal: no progress, nothing written, log lines pass untouched.
func TestProgressNotATerminal(t *testing.T) {
	var b bytes.Buffer
	if isTerminal(&b) {
		t.Fatal("a buffer is not a terminal")
	}
	p := startProgress(&b, false, time.Millisecond)
	if p != nil {
		t.Fatal("want no progress")
	}
	p.onBurst(scenario.ConfirmEach, metrics.NewSeries(time.Now(), 0), metrics.NewTimeline(time.Now()))
	p.hide()
	if w := p.logWriter(&b); w != &b {
		t.Error("log lines must go straight to stderr")
	}
	time.Sleep(5 * time.Millisecond)
	p.Stop()
	if b.Len() != 0 {
		t.Errorf("wrote %q", b.String())
	}
}

// On a terminal the line is drawn, erased before a log line and at the end.
func TestProgressDraw(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b}
	start := time.Now()
	s := metrics.NewSeries(start, 0)
	p.onBurst(scenario.FireAndForget, s, metrics.NewTimeline(start))
	l := metrics.NewLedger("p-", 2)
	l.Attach(s)
	l.Published(0, false)
	l.Published(1, false)
	p.draw(start.Add(2 * time.Second))
	if _, err := p.Write([]byte("log\n")); err != nil {
		t.Fatal(err)
	}
	want := clearLine + "fire-and-forget    2.0s  published 2  acked 0  in flight 0  1 msg/s  broker up" + clearLine + "log\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

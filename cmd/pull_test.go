package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// On a terminal a pull is the progress line, redrawn in place; once done,
// a phase line, and the broker's wait is timed from then.
func TestProgressPull(t *testing.T) {
	var b bytes.Buffer
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := newProgress(&b, func() int { return 100 }, true)
	p.now = func() time.Time { return clock }
	p.startScenario(1, 500)
	p.brokerStarting("127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie", "", 1)
	b.Reset()
	p.pulling("pulling 127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie: 45.2 MB of 120.0 MB")
	clock = clock.Add(3 * time.Second)
	p.draw()
	if got, want := b.String(), clearLine+"pulling 127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie: 45.2 MB of 120.0 MB  3s"; got != want {
		t.Errorf("progress line %q, want %q", got, want)
	}
	b.Reset()
	p.pulled("127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie", 4200*time.Millisecond)
	clock = clock.Add(time.Second)
	p.draw()
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 2 || lines[0] != clearLine+phaseLine("broker", "pulled 127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie in %.1fs", 4.2) ||
		lines[1] != clearLine+"waiting for the broker  1s" {
		t.Errorf("after the pull: %q", lines)
	}
	var none *progress // not a terminal, or -q: nothing, no panic
	none.pulling("x")
	none.pulled("x", time.Second)
}

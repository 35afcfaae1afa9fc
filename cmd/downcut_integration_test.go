package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// longDownScenarios: a kill and a pause with the longest down allowed (10m)
// at 50% of 400 confirm-each orders, with a publisher that gives up
// reconnecting after 4 s. Before, the run waited out the whole down after
// its publisher had given up (measured with down: 1000000h: still running
// at 240 s, only Ctrl-C ended it).
const longDownScenarios = `version: 1
scenarios:
  - name: long-kill
    queue: {settle_before_burst: 1s}
    load: {messages: 400, modes: [confirm-each], confirm_timeout: 2s, reconnect_timeout: 4s, burst_timeout: 20s}
    faults: [{action: kill, published_percent: 50, down: 10m}]
    drain: {idle: 1s, lost_wait: 2s, timeout: 20s}
  - name: long-pause
    queue: {settle_before_burst: 1s}
    load: {messages: 400, modes: [confirm-each], confirm_timeout: 2s, reconnect_timeout: 4s, burst_timeout: 20s}
    faults: [{action: pause, published_percent: 50, down: 10m}]
    drain: {idle: 1s, lost_wait: 2s, timeout: 20s}
`

// TestLongDownEndsWithTheBurst: the down wait ends when the publisher gives
// up, the broker is recovered, the drain runs, and the run ends
// inconclusive (the publisher gave up), saying the down was cut short and
// after how long: after the publisher's reconnect timeout, before the 10m
// planned. No container is left behind. No wall-clock bound: the note
// says what was cut, and when.
func TestLongDownEndsWithTheBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	file := filepath.Join(t.TempDir(), "long.yaml")
	if err := os.WriteFile(file, []byte(longDownScenarios), 0o644); err != nil {
		t.Fatal(err)
	}
	note := regexp.MustCompile(`^(kill|pause): down cut short at the end of the burst after (\d+\.\d) s \(10m0s planned\); the broker was recovered then$`)
	for _, name := range []string{"long-kill", "long-pause"} {
		t.Run(name, func(t *testing.T) {
			args := []string{"run", name, "-f", file, "--out", t.TempDir()}
			if img := os.Getenv("RMQT_IMAGE"); img != "" {
				args = append(args, "--image", img)
			}
			code, stdout, stderr := runCLI(t, args...)
			t.Logf("%s\n%s", name, stdout)
			if code != ExitInconclusive {
				t.Fatalf("exit %d, want 3 (inconclusive)\n%s", code, stderr)
			}
			r := readResult(t, stdout)
			checkNoContainerLeft(t, r.RunID)
			m := mode(t, r, scenario.ConfirmEach)
			if m.Verdict.Status != scenario.Inconclusive || len(m.Faults) != 1 || m.Faults[0].Error != "" || m.Faults[0].DownMS != 600000 {
				t.Fatalf("verdict %+v faults %+v", m.Verdict, m.Faults)
			}
			var cut []string
			for _, n := range m.Notes {
				if g := note.FindStringSubmatch(n); g != nil {
					cut = g
				}
			}
			if cut == nil || cut[1] != string(m.Faults[0].Action) {
				t.Fatalf("notes %q: none says the %s's down was cut short", m.Notes, m.Faults[0].Action)
			}
			t.Logf("note: %s", cut[0])
			// Cut when the publisher gave up: not before its 4 s
			// reconnect timeout began (the connection died at the fault,
			// or, paused, at its 2 s confirm timeout; the note rounds to
			// 0.1 s), and before the 10m planned.
			if after, _ := strconv.ParseFloat(cut[2], 64); after < 3.9 || after >= 600 {
				t.Fatalf("down cut after %.1f s, want at least the publisher's 4 s reconnect timeout and less than the 10m planned", after)
			}
			// Inconclusive because the publisher gave up, for no other reason;
			// the fault fired at 200 of 400, nothing confirmed was lost.
			rs := m.Verdict.Reasons
			if len(rs) != 2 || !strings.HasPrefix(rs[0], "publisher: could not reconnect within 4s: ") || rs[1] != fmt.Sprintf("%d orders were never published", 400-m.Sent) {
				t.Fatalf("reasons %q", rs)
			}
			if m.Faults[0].AtPublished != 200 || m.Sent < 200 || m.ClassSum() != m.Sent || m.Lost != 0 {
				t.Fatalf("fault at %d published, sent %d, classes %d, lost %d", m.Faults[0].AtPublished, m.Sent, m.ClassSum(), m.Lost)
			}
		})
	}
}

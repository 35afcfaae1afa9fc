package scenario

import (
	"strings"
	"testing"
)

// Each section validator on its own, through Validate (paths relative to
// the scenario, no line): one broken rule each, the exact message.
func TestValidateSections(t *testing.T) {
	base := func() *Scenario {
		f, err := Parse("s.yaml", []byte(head+"    load: {messages: 100, modes: [confirm-window]}\n    faults: [{action: kill, published: 50}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		return &f.Scenarios[0]
	}
	if errs := Validate("s.yaml", base()); errs != nil {
		t.Fatalf("valid scenario refused: %v", errs)
	}
	f := false
	for _, tc := range []struct {
		section string
		change  func(s *Scenario)
		want    string
	}{
		{"broker", func(s *Scenario) { s.Broker.Image = " " }, "s.yaml: broker.image: must name an image"},
		{"queue", func(s *Scenario) { s.Queue.Durable = &f }, "s.yaml: queue.durable: quorum queues are always durable; use type: classic for a non-durable queue"},
		{"load (schema range)", func(s *Scenario) { s.Load.Window = 70000 }, "s.yaml: load.window: must be within 1–65535, got 70000"},
		{"load", func(s *Scenario) { s.Load.Modes = append(s.Load.Modes, ConfirmWindow) }, `s.yaml: load.modes[1]: "confirm-window" listed twice`},
		{"consumers", func(s *Scenario) {
			s.Consumers = Consumers{Count: 1, Prefetch: 2, AckEvery: 3, OnDelivery: ConsumerAck}
		},
			"s.yaml: consumers.ack_every: must be within 1–2 (the prefetch: a consumer never holds more unacknowledged deliveries), got 3"},
		{"faults", func(s *Scenario) { s.Faults[0].Published = intp(101) }, "s.yaml: faults[0].published: must be within 0–100 (load.messages), got 101"},
		{"timeline", func(s *Scenario) { s.Faults[0].ManualRecovery, s.Faults[0].Down = true, 0 },
			"s.yaml: faults[0].manual_recovery: a step recovered by a later one must be triggered by after (or after_burst), so its recovery cannot come due before it\n" +
				"s.yaml: faults[0]: the broker would stay stopped at the end: add a start step"},
		{"matrix", func(s *Scenario) { s.Matrix.QueueTypes = []QueueType{Classic, "stream"} },
			`s.yaml: matrix.queue_types[1]: "stream" is not a queue type (quorum, classic)`},
		{"drain", func(s *Scenario) { s.Drain.LostWait = s.Drain.Idle - 1 },
			"s.yaml: drain.lost_wait: 1.999999999s is shorter than drain.idle 2s: the drain would give up on confirmed ids before it ever counts as idle"},
		{"expect", func(s *Scenario) { s.Expect.Modes = map[Mode]ModeExpectations{ConfirmEach: {Sent: intp(1)}} },
			`s.yaml: expect.modes.confirm-each: "confirm-each" is not one of this scenario's load.modes`},
	} {
		t.Run(tc.section, func(t *testing.T) {
			s := base()
			tc.change(s)
			errs := Validate("s.yaml", s)
			if got := errs.Error(); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestUncheckedExpectations(t *testing.T) {
	s := &Scenario{Name: "k", Load: Load{Modes: []Mode{ConfirmEach}},
		Expect: Expect{Modes: map[Mode]ModeExpectations{ConfirmEach: {}, ConfirmWindow: {}, FireAndForget: {}}}}
	orig := s.Expect.Modes
	got := strings.Join(s.UncheckedExpectations(), "\n")
	want := `expect.modes.fire-and-forget of scenario "k" is not checked: --mode runs only confirm-each` + "\n" +
		`expect.modes.confirm-window of scenario "k" is not checked: --mode runs only confirm-each`
	if got != want || len(s.Expect.Modes) != 1 || len(orig) != 3 {
		t.Fatalf("got %q (left %d, original %d), want %q", got, len(s.Expect.Modes), len(orig), want)
	}
}

package scenario

import (
	"reflect"
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// scopedFile is a scenario stating unscoped counts and three version
// scopes, the third overlapping the second (>=4.0 holds 4.3.6 too).
const scopedFile = head + `    queue: {type: quorum, dead_letter_queue: true}
    load: {messages: 100, modes: [confirm-each, confirm-window]}
    consumers: {count: 1, on_delivery: nack-requeue, max_deliveries: 30}
    expect:
      modes:
        confirm-window: {sent: 100, dead_lettered: 100, deliveries_per_message: 1}
      versions:
        - when: {rabbitmq: ">=3.10 <4.3"}
          because: PR A
          modes:
            confirm-window: {deliveries_per_message: 4, dead_letter_reason: delivery_limit}
        - when: {rabbitmq: ">=4.3"}
          because: PR B
          finding: docs say otherwise
          modes:
            confirm-each: {dead_lettered: 7}
            confirm-window: {deliveries_per_message: 30, dead_letter_reason: rejected}
        - when: {rabbitmq: ">=4.0"}
          because: never reached for 4.3
          modes:
            confirm-window: {deliveries_per_message: 99}
`

func loadScoped(t *testing.T) *Scenario {
	t.Helper()
	f, err := Parse("s.yaml", []byte(scopedFile))
	if err != nil {
		t.Fatal(err)
	}
	return &f.Scenarios[0]
}

func TestForBrokerVersion(t *testing.T) {
	tests := []struct {
		version string
		want    *AppliedVersionScope
		dpm     *int // confirm-window.deliveries_per_message after the overlay
		reason  string
		warning string
	}{
		{"RabbitMQ 4.0.5", &AppliedVersionScope{BrokerVersion: "RabbitMQ 4.0.5", When: ">=3.10 <4.3", Because: "PR A",
			Stated: []string{"confirm-window.deliveries_per_message", "confirm-window.dead_letter_reason"}}, ptr(4), "delivery_limit", ""},
		{"RabbitMQ 3.10.8", &AppliedVersionScope{BrokerVersion: "RabbitMQ 3.10.8", When: ">=3.10 <4.3", Because: "PR A",
			Stated: []string{"confirm-window.deliveries_per_message", "confirm-window.dead_letter_reason"}}, ptr(4), "delivery_limit", ""},
		// The first match wins: >=4.3 comes before the overlapping >=4.0.
		{"RabbitMQ 4.3.6", &AppliedVersionScope{BrokerVersion: "RabbitMQ 4.3.6", When: ">=4.3", Because: "PR B", Finding: "docs say otherwise",
			Stated: []string{"confirm-each.dead_lettered", "confirm-window.deliveries_per_message", "confirm-window.dead_letter_reason"}}, ptr(30), "rejected", ""},
		{"4.3.6", &AppliedVersionScope{BrokerVersion: "4.3.6", When: ">=4.3", Because: "PR B", Finding: "docs say otherwise",
			Stated: []string{"confirm-each.dead_lettered", "confirm-window.deliveries_per_message", "confirm-window.dead_letter_reason"}}, ptr(30), "rejected", ""},
		{"RabbitMQ 3.9.29", &AppliedVersionScope{BrokerVersion: "RabbitMQ 3.9.29"}, ptr(1), "",
			`no expectation in scenario "a" is stated for RabbitMQ 3.9.29: only the unscoped ones were checked`},
		{"", &AppliedVersionScope{}, ptr(1), "",
			`no expectation in scenario "a" is stated for this broker: only the unscoped ones were checked (the broker reported no version)`},
		{"RabbitMQ banana", &AppliedVersionScope{BrokerVersion: "RabbitMQ banana"}, ptr(1), "",
			`no expectation in scenario "a" is stated for RabbitMQ banana: only the unscoped ones were checked (its version "RabbitMQ banana" could not be read: invalid semantic version)`},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			s := loadScoped(t)
			got, applied, warning := s.ForBrokerVersion(tt.version)
			if !reflect.DeepEqual(applied, tt.want) {
				t.Errorf("applied %+v, want %+v", applied, tt.want)
			}
			if warning != tt.warning {
				t.Errorf("warning %q\nwant    %q", warning, tt.warning)
			}
			if got.Expect.Scope != applied {
				t.Errorf("Expect.Scope %p, want the applied scope %p", got.Expect.Scope, applied)
			}
			cw := got.Expect.Modes[ConfirmWindow]
			if *cw.DeliveriesPerMessage != *tt.dpm || cw.DeadLetterReason != tt.reason {
				t.Errorf("confirm-window deliveries_per_message %d reason %q, want %d %q", *cw.DeliveriesPerMessage, cw.DeadLetterReason, *tt.dpm, tt.reason)
			}
			// Field by field: what the scope leaves unset stays.
			if *cw.Sent != 100 || *cw.DeadLettered != 100 {
				t.Errorf("unscoped fields changed: %+v", cw)
			}
			// The loaded scenario is left as it was.
			if base := s.Expect.Modes[ConfirmWindow]; *base.DeliveriesPerMessage != 1 || base.DeadLetterReason != "" || s.Expect.Scope != nil {
				t.Errorf("the loaded scenario changed: %+v", base)
			}
			// Matrix cells keep the scope.
			cell := got.ForCell(Cell{QueueType: Quorum, Persistent: false, Repeat: 1})
			if cell.Expect.Scope != applied || *cell.Expect.Modes[ConfirmWindow].DeliveriesPerMessage != *tt.dpm {
				t.Errorf("ForCell lost the scope")
			}
		})
	}
}

// A scenario without expect.versions behaves as before: unchanged, no
// scope recorded, no warning.
func TestForBrokerVersionWithoutScopes(t *testing.T) {
	f, err := Parse("s.yaml", []byte(head+"    load: {messages: 10}\n    expect: {modes: {confirm-each: {sent: 10}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &f.Scenarios[0]
	got, applied, warning := s.ForBrokerVersion("RabbitMQ 4.3.6")
	if applied != nil || warning != "" || !reflect.DeepEqual(got, *s) {
		t.Fatalf("got %+v, %+v, %q", got.Expect, applied, warning)
	}
}

func TestOverlayStatesEveryFieldKind(t *testing.T) {
	base := ModeExpectations{Sent: ptr(10), Lost: ptr(0)}
	got, stated := overlay(base, ModeExpectations{Lost: ptr(3), ChannelClosedWith: "404", DeadLetterReason: "rejected"})
	want := ModeExpectations{Sent: ptr(10), Lost: ptr(3), ChannelClosedWith: "404", DeadLetterReason: "rejected"}
	if !reflect.DeepEqual(got, want) || !slices.Equal(stated, []string{"lost", "channel_closed_with", "dead_letter_reason"}) {
		t.Fatalf("got %+v %v", got, stated)
	}
}

// A broken scoped expectation names the broker version, the field, the
// range and the source; an unscoped one reads as before.
func TestJudgeNamesTheVersionOfAScopedExpectation(t *testing.T) {
	s := loadScoped(t)
	sc, _, _ := s.ForBrokerVersion("RabbitMQ 4.3.6")
	c := metrics.Counts{Sent: 100, Confirmed: 100, Delivered: 100, DeadLettered: 100}
	obs := Observed{Consumers: &ConsumerStats{DeliveriesPerMessage: map[string]int{"4": 100}}, DeadLetterReasons: map[string]int{"delivery_limit": 100}}
	v := Judge(ConfirmWindow, c, obs, sc.Expect, Conditions{})
	want := []string{
		"RabbitMQ 4.3.6: deliveries_per_message: expected every message at exactly 30, got 4×100 (value×messages) (expected on RabbitMQ >=4.3: PR B)",
		"RabbitMQ 4.3.6: dead_letter_reason: expected every dead-lettered message to carry x-death reason rejected, got delivery_limit×100 (reason×messages) (expected on RabbitMQ >=4.3: PR B)",
	}
	if v.Status != Fail || !slices.Equal(v.Reasons, want) {
		t.Fatalf("got %s %q\nwant %q", v.Status, v.Reasons, want)
	}
	// No scope matched: the unscoped expectation, worded as ever.
	sc, _, _ = s.ForBrokerVersion("RabbitMQ 3.9.29")
	v = Judge(ConfirmWindow, c, obs, sc.Expect, Conditions{})
	want = []string{"deliveries_per_message: expected every message at exactly 1, got 4×100 (value×messages)"}
	if v.Status != Fail || !slices.Equal(v.Reasons, want) {
		t.Fatalf("got %s %q\nwant %q", v.Status, v.Reasons, want)
	}
	// Met: pass.
	sc, _, _ = s.ForBrokerVersion("RabbitMQ 4.0.5")
	if v := Judge(ConfirmWindow, c, obs, sc.Expect, Conditions{}); v.Status != Pass {
		t.Fatalf("got %s %q", v.Status, v.Reasons)
	}
}

func TestCheckDeadLetterReason(t *testing.T) {
	for _, tt := range []struct {
		reasons map[string]int
		want    string
	}{
		{map[string]int{"rejected": 5}, ""},
		{map[string]int{"rejected": 5, "delivery_limit": 1}, "dead_letter_reason: expected every dead-lettered message to carry x-death reason rejected, got delivery_limit×1, rejected×5 (reason×messages)"},
		{nil, "dead_letter_reason: expected every dead-lettered message to carry x-death reason rejected, got nothing dead-lettered (reason×messages)"},
	} {
		if got := checkDeadLetterReason(tt.reasons, "rejected"); got != tt.want {
			t.Errorf("%v: got %q\nwant %q", tt.reasons, got, tt.want)
		}
	}
}

// --mode drops the scopes' expectations of modes it leaves out, with a
// warning each; a scope left with nothing is dropped.
func TestUncheckedScopedModes(t *testing.T) {
	s := loadScoped(t)
	s.Load.Modes = []Mode{ConfirmEach}
	got := s.UncheckedExpectations()
	want := []string{
		`expect.modes.confirm-window of scenario "a" is not checked: --mode runs only confirm-each`,
		`expect.versions[0].modes.confirm-window of scenario "a" is not checked: --mode runs only confirm-each`,
		`expect.versions[1].modes.confirm-window of scenario "a" is not checked: --mode runs only confirm-each`,
		`expect.versions[2].modes.confirm-window of scenario "a" is not checked: --mode runs only confirm-each`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if len(s.Expect.Versions) != 1 || s.Expect.Versions[0].When.RabbitMQ != ">=4.3" {
		t.Fatalf("scopes left: %+v", s.Expect.Versions)
	}
	if errs := Validate("s.yaml", s); errs != nil {
		t.Fatalf("not valid after --mode: %v", errs)
	}
}

func TestVersionScopeErrors(t *testing.T) {
	body := head + "    queue: {type: quorum, dead_letter_queue: true}\n    load: {messages: 10, modes: [confirm-window]}\n    expect:\n      versions:\n"
	expectParseErrors(t, []struct {
		name, yaml string
		want       []string
	}{
		{"range does not parse", body + "        - {when: {rabbitmq: \">=4.x.y\"}, because: PR, modes: {confirm-window: {lost: 0}}}\n",
			[]string{`s.yaml:8:29: scenarios[0].expect.versions[0].when.rabbitmq: ">=4.x.y" is not a version range: improper constraint: >=4.x.y`}},
		{"range missing", body + "        - {because: PR, modes: {confirm-window: {lost: 0}}}\n",
			[]string{`s.yaml:8:11: scenarios[0].expect.versions[0].when.rabbitmq: needs a range of RabbitMQ versions, e.g. ">=4.0 <4.3"`}},
		{"because empty", body + "        - {when: {rabbitmq: \">=4.0\"}, because: \" \", modes: {confirm-window: {lost: 0}}}\n",
			[]string{`s.yaml:8:48: scenarios[0].expect.versions[0].because: must cite the source of this behaviour (release notes, an issue or a pull request)`}},
		{"no modes", body + "        - {when: {rabbitmq: \">=4.0\"}, because: PR}\n",
			[]string{`s.yaml:8:11: scenarios[0].expect.versions[0].modes: states no expectation: name the modes whose counts differ on these versions`}},
		{"mode not run", body + "        - {when: {rabbitmq: \">=4.0\"}, because: PR, modes: {confirm-each: {lost: 0}}}\n",
			[]string{`s.yaml:8:74: scenarios[0].expect.versions[0].modes.confirm-each: "confirm-each" is not one of this scenario's load.modes`}},
		{"per-mode rule", body + "        - {when: {rabbitmq: \">=4.0\"}, because: PR, modes: {confirm-window: {deliveries_per_message: 4}}}\n",
			[]string{`s.yaml:8:101: scenarios[0].expect.versions[0].modes.confirm-window.deliveries_per_message: is measured by live consumers: set consumers.count`}},
		{"reason unknown", body + "        - {when: {rabbitmq: \">=4.0\"}, because: PR, modes: {confirm-window: {dead_letter_reason: limit}}}\n",
			[]string{`s.yaml:8:97: scenarios[0].expect.versions[0].modes.confirm-window.dead_letter_reason: "limit" is not one of (delivery_limit, rejected, expired, maxlen, none, parked)`}},
		{"unknown key", body + "        - {when: {rabbitmq: \">=4.0\", erlang: \"27\"}, because: PR, modes: {confirm-window: {lost: 0}}}\n",
			[]string{`s.yaml:8:38: scenarios[0].expect.versions[0].when.erlang: unknown field (known: rabbitmq)`}},
	})
}

func ptr(n int) *int { return &n }

package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

func brokerResult(version, image string) *scenario.Result {
	return &scenario.Result{Scenario: "s", BrokerVersion: version, Image: image}
}

// The warning names both brokers, exactly; an unknown version is never a
// different one, and is said to be unknown instead.
func TestBrokerWarning(t *testing.T) {
	const old, new = "rmqtorture/rabbitmq:4.0-trixie", "rmqtorture/rabbitmq:4.3-forky"
	cases := []struct {
		name       string
		base, cand *scenario.Result
		warning    string
		note       string
	}{
		{"versions and images differ", brokerResult("RabbitMQ 4.0.5", old), brokerResult("RabbitMQ 4.3.6", new),
			"baseline ran RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate RabbitMQ 4.3.6 (rmqtorture/rabbitmq:4.3-forky): differences may be the broker's, not your change", ""},
		{"same version, another image", brokerResult("RabbitMQ 4.0.5", old), brokerResult("RabbitMQ 4.0.5", "rabbitmq:4.0"),
			"baseline ran RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate RabbitMQ 4.0.5 (rabbitmq:4.0): differences may be the broker's, not your change", ""},
		{"same broker", brokerResult("RabbitMQ 4.0.5", old), brokerResult("RabbitMQ 4.0.5", old), "", ""},
		{"baseline version unknown, same image", brokerResult("", old), brokerResult("RabbitMQ 4.0.5", old), "",
			"The baseline's broker version is unknown (no broker_version in its result.json): compare cannot tell whether it ran the candidate's RabbitMQ 4.0.5, so it does not warn."},
		{"both unknown", brokerResult("", old), brokerResult("", old), "",
			"The baseline's and the candidate's broker versions are unknown (no broker_version in their result.json): compare cannot tell whether both ran the same RabbitMQ, so it does not warn."},
		{"candidate unknown, another image", brokerResult("RabbitMQ 4.0.5", old), brokerResult("", new),
			"baseline ran RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate an unknown version (rmqtorture/rabbitmq:4.3-forky): differences may be the broker's, not your change", ""},
		{"--uri on both, versions differ", &scenario.Result{BrokerVersion: "RabbitMQ 3.13.7", URI: "amqp://guest:xxxxx@127.0.0.1:5672/"}, &scenario.Result{BrokerVersion: "RabbitMQ 4.0.5", URI: "amqp://guest:xxxxx@127.0.0.1:5672/"},
			"baseline ran RabbitMQ 3.13.7 (a broker named with --uri), candidate RabbitMQ 4.0.5 (a broker named with --uri): differences may be the broker's, not your change", ""},
	}
	for _, tc := range cases {
		if got := BrokerWarning(tc.base, tc.cand); got != tc.warning {
			t.Errorf("%s: warning\n %q\nwant\n %q", tc.name, got, tc.warning)
		}
		if got := brokerUnknownNote(tc.base, tc.cand, "candidate"); got != tc.note {
			t.Errorf("%s: note\n %q\nwant\n %q", tc.name, got, tc.note)
		}
	}
}

// The single compare carries the warning into its markdown and JSON, and
// no longer repeats it as a setting note (nor --image).
func TestCompareBrokerWarningRendered(t *testing.T) {
	base, res := result(confirmMode()), result(confirmMode())
	base.Command, res.Command = "rmqtorture run kill-mid-burst", "rmqtorture run kill-mid-burst --image rmqtorture/rabbitmq:4.3-forky"
	res.BrokerVersion, res.Image = "RabbitMQ 4.3.6", "rmqtorture/rabbitmq:4.3-forky"
	c := Compare(base, res, testThresholds)
	want := "baseline ran RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate RabbitMQ 4.3.6 (rmqtorture/rabbitmq:4.3-forky): differences may be the broker's, not your change"
	if c.BrokerWarning != want || len(c.Notes) != 0 || c.Regressed() {
		t.Fatalf("warning %q notes %q regressions %q", c.BrokerWarning, c.Notes, c.Regressions)
	}
	var md, js bytes.Buffer
	if err := CompareMarkdown(&md, c, "b.json", "r.json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**No regression.**\n\n**Warning:** "+want+".\n") {
		t.Fatalf("markdown lacks the warning:\n%s", md.String())
	}
	if err := CompareJSON(&js, c, "b.json", "r.json"); err != nil {
		t.Fatal(err)
	}
	var got struct{ Warnings []string }
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || !slices.Equal(got.Warnings, []string{want}) {
		t.Fatalf("JSON warnings %q (%v)", got.Warnings, err)
	}
}

// matrixCell makes a matrix cell.
func matrixCell(q scenario.QueueType, persistent bool) *scenario.Cell {
	return &scenario.Cell{QueueType: q, Persistent: persistent, Repeat: 1}
}

func named(file string, r *scenario.Result) NamedResult { return NamedResult{File: file, Result: r} }

func scenResult(name, version, image string, modes ...scenario.ModeResult) *scenario.Result {
	r := result(modes...)
	r.Scenario, r.BrokerVersion, r.Image = name, version, image
	return r
}

// deliveryLimit is a confirm-window mode of delivery-limit: 100 orders,
// each delivered 4 times and dead-lettered (4.0), or never dead-lettered
// and delivered ~31,600 times (4.3, issue 13's measurement).
func deliveryLimit(dead int, deliveries string, status scenario.Status) scenario.ModeResult {
	m := confirmMode()
	m.Sent, m.Confirmed, m.Delivered = 100, 100, 100
	m.DeadLettered = dead
	m.Consumers = &scenario.ConsumerStats{DeliveriesPerMessage: map[string]int{deliveries: 100}}
	m.Verdict = scenario.Verdict{Status: status}
	if status != scenario.Pass {
		m.Verdict.Reasons = []string{"dead_lettered 0, expected 100"}
	}
	return m
}

// Results pair by scenario, then by mode and cell; what one side lacks is
// listed; a baseline scenario or cell missing from the candidate is a
// regression, one only the candidate has is not.
func TestCompareVersionsPairing(t *testing.T) {
	const v40, v43 = "RabbitMQ 4.0.5", "RabbitMQ 4.3.6"
	const i40, i43 = "rmqtorture/rabbitmq:4.0-trixie", "rmqtorture/rabbitmq:4.3-forky"
	qd, cd, qt := confirmMode(), confirmMode(), confirmMode()
	qd.Cell, cd.Cell, qt.Cell = matrixCell(scenario.Quorum, true), matrixCell(scenario.Classic, true), matrixCell(scenario.Quorum, false)
	bases := []NamedResult{
		named("old/matrix/result.json", scenResult("matrix", v40, i40, qd, cd)),
		named("old/kill/result.json", scenResult("kill-mid-burst", v40, i40, fireMode(), confirmMode())),
		named("old/retry/result.json", scenResult("retry-to-dlq", v40, i40, confirmMode())),
	}
	cands := []NamedResult{
		named("new/kill/result.json", scenResult("kill-mid-burst", v43, i43, fireMode(), confirmMode())),
		named("new/matrix/result.json", scenResult("matrix", v43, i43, qd, qt)),
		named("new/soak/result.json", scenResult("soak", v43, i43, confirmMode())),
	}
	v := CompareVersions("old", bases, "new", cands, testThresholds, nil)
	wantUnpaired := []Unpaired{
		{Scenario: "matrix", Mode: "confirm-window · classic · persistent · #1", Side: "baseline", File: "old/matrix/result.json"},
		{Scenario: "matrix", Mode: "confirm-window · quorum · transient · #1", Side: "candidate", File: "new/matrix/result.json"},
		{Scenario: "retry-to-dlq", Side: "baseline", File: "old/retry/result.json"},
		{Scenario: "soak", Side: "candidate", File: "new/soak/result.json"},
	}
	if !slices.Equal(v.Unpaired, wantUnpaired) {
		t.Fatalf("unpaired\n%+v\nwant\n%+v", v.Unpaired, wantUnpaired)
	}
	wantReg := []string{
		"matrix: confirm-window · classic · persistent · #1: missing from the candidate",
		"retry-to-dlq: only in the baseline (old/retry/result.json), missing from the candidate",
	}
	if !slices.Equal(v.Regressions, wantReg) {
		t.Fatalf("regressions %q\nwant %q", v.Regressions, wantReg)
	}
	if len(v.Pairs) != 2 || v.Pairs[0].Scenario != "kill-mid-burst" || v.Pairs[1].Scenario != "matrix" {
		t.Fatalf("pairs %+v", v.Pairs)
	}
	p := v.Pairs[0]
	if p.BaselineFile != "old/kill/result.json" || p.CandidateFile != "new/kill/result.json" || p.BaselineBroker != v40+" ("+i40+")" || p.CandidateBroker != v43+" ("+i43+")" {
		t.Fatalf("pair %+v", p)
	}
	want := "baseline ran RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate RabbitMQ 4.3.6 (rmqtorture/rabbitmq:4.3-forky): differences may be the broker's, not your change"
	if !slices.Equal(v.Warnings, []string{want}) {
		t.Fatalf("warnings %q: want the one warning, once for both pairs", v.Warnings)
	}
	// Identical figures: every row ok, rates at ratio 1.
	for _, ch := range p.Changes {
		if ch.Status != StatusOK {
			t.Errorf("%s %s: %s, want ok", ch.Mode, ch.Field, ch.Status)
		}
		if ch.Ratio != nil && *ch.Ratio != 1 {
			t.Errorf("%s %s: ratio %v, want 1", ch.Mode, ch.Field, *ch.Ratio)
		}
	}
}

// Ratios, and the thresholds compare uses: a 50% throughput drop and a
// doubled p99 regress, a missing share 5 points up does not; counts that
// differ are "changed" and fail nothing.
func TestCompareVersionsChangesAndRatios(t *testing.T) {
	b, r := confirmMode(), confirmMode()
	r.PreFaultPublishRate, r.ConfirmRate, r.ConfirmLatency.P99 = 500, 990, 8
	r.InDoubt, r.Duplicates = 12, 7
	bf, rf := fireMode(), fireMode()
	rf.UnconfirmedMissing, rf.UnconfirmedDelivered = 3200, 800
	v := CompareVersions("old", []NamedResult{named("b.json", scenResult("kill-mid-burst", "RabbitMQ 4.0.5", "", bf, b))},
		"new", []NamedResult{named("r.json", scenResult("kill-mid-burst", "RabbitMQ 4.0.5", "", rf, r))}, testThresholds, nil)
	type row struct {
		mode, field, base, cand, status string
		ratio                           float64 // 0: none
	}
	var got []row
	for _, ch := range v.Pairs[0].Changes {
		q := 0.0
		if ch.Ratio != nil {
			q = *ch.Ratio
		}
		got = append(got, row{ch.Mode, ch.Field, ch.Baseline, ch.Candidate, ch.Status, q})
	}
	want := []row{
		{"fire-and-forget", "verdict", "pass", "pass", StatusOK, 0},
		{"fire-and-forget", "unconfirmed_missing", "3,000 (75%)", "3,200 (80%)", StatusOK, 0},
		{"fire-and-forget", "pre_fault_publish_rate_msgs_per_s", "50,000", "50,000", StatusOK, 1},
		{"fire-and-forget", "client_recovery_ms", "12,000", "12,000", StatusOK, 1},
		{"confirm-window", "verdict", "pass", "pass", StatusOK, 0},
		{"confirm-window", "lost", "0", "0", StatusOK, 0},
		{"confirm-window", "in_doubt", "0", "12", StatusChanged, 0},
		{"confirm-window", "duplicates", "0", "7", StatusChanged, 0},
		{"confirm-window", "pre_fault_publish_rate_msgs_per_s", "1,000", "500", StatusRegression, 0.5},
		{"confirm-window", "confirm_rate_msgs_per_s", "900", "990", StatusOK, 1.1},
		{"confirm-window", "confirm_latency_ms.p99", "4.0", "8.0", StatusRegression, 2},
		{"confirm-window", "client_recovery_ms", "10,000", "10,000", StatusOK, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("rows\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.mode != w.mode || g.field != w.field || g.base != w.base || g.cand != w.cand || g.status != w.status || (g.ratio-w.ratio) > 1e-9 || (w.ratio-g.ratio) > 1e-9 {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	wantReg := []string{
		"kill-mid-burst: confirm-window: publish msg/s (before fault) fell 50% (1,000 → 500 msg/s), more than the 20% allowed",
		"kill-mid-burst: confirm-window: confirm p99 rose 100% (4.0 → 8.0 ms), more than the 50% allowed",
	}
	if !slices.Equal(v.Regressions, wantReg) || len(v.Accepted) != 0 || len(v.Warnings) != 0 {
		t.Fatalf("regressions %q accepted %q warnings %q", v.Regressions, v.Accepted, v.Warnings)
	}
}

// delivery-limit on 4.0 and 4.3 (issue 13's table): the 4.3 verdict fails
// and dead-lettering changed. Unaccepted, the verdict is a regression; an
// accept entry accepts it with its reason and place; a version scope that
// states dead_lettered accepts that change, citing its because.
func TestCompareVersionsAccept(t *testing.T) {
	base := scenResult("delivery-limit", "RabbitMQ 4.0.5", "rmqtorture/rabbitmq:4.0-trixie", deliveryLimit(100, "4", scenario.Pass))
	cand := scenResult("delivery-limit", "RabbitMQ 4.3.6", "rmqtorture/rabbitmq:4.3-forky", deliveryLimit(0, "31600", scenario.Fail))
	bs, cs := []NamedResult{named("old.json", base)}, []NamedResult{named("new.json", cand)}

	v := CompareVersions("old.json", bs, "new.json", cs, testThresholds, nil)
	wantReg := []string{"delivery-limit: confirm-window: verdict fail (dead_lettered 0, expected 100)"}
	if !slices.Equal(v.Regressions, wantReg) || len(v.Accepted) != 0 {
		t.Fatalf("unaccepted: regressions %q accepted %q", v.Regressions, v.Accepted)
	}
	statuses := func(v *VersionsComparison) map[string]string {
		m := map[string]string{}
		for _, ch := range v.Pairs[0].Changes {
			m[ch.Field] = ch.Status
			if ch.Because != "" {
				m[ch.Field] += ": " + ch.Because
			}
		}
		return m
	}
	if got := statuses(v); got["dead_lettered"] != StatusChanged || got["deliveries_per_message"] != StatusChanged || got["verdict"] != StatusRegression {
		t.Fatalf("statuses %q", got)
	}
	dpm := v.Pairs[0].Changes[slices.IndexFunc(v.Pairs[0].Changes, func(c Change) bool { return c.Field == "deliveries_per_message" })]
	if dpm.Baseline != "4 (100 messages)" || dpm.Candidate != "31,600 (100 messages)" || *dpm.Ratio != 7900 {
		t.Fatalf("deliveries per message %+v", dpm)
	}

	accepts, err := ParseAccept("accept.yaml", []byte(`accept:
  - scenario: delivery-limit
    mode: confirm-window
    field: verdict
    because: RabbitMQ 4.3 does not count nack-requeue toward x-delivery-limit
  - scenario: kill-mid-burst
    field: lost
    because: stale
`))
	if err != nil {
		t.Fatal(err)
	}
	// Stated by the candidate's scope alone, the change is not accepted:
	// nothing states the baseline's value.
	cand.VersionScope = &scenario.AppliedVersionScope{BrokerVersion: "RabbitMQ 4.3.6", When: ">=4.3", Because: "rabbitmq-server#13200", Stated: []string{"confirm-window.dead_lettered"}}
	if got := statuses(CompareVersions("old.json", bs, "new.json", cs, testThresholds, accepts)); got["dead_lettered"] != StatusChanged {
		t.Fatalf("stated on one side only: dead_lettered %q, want changed", got["dead_lettered"])
	}
	base.VersionScope = &scenario.AppliedVersionScope{BrokerVersion: "RabbitMQ 4.0.5", When: "<4.3", Because: "rabbitmq-server PR #11937", Stated: []string{"confirm-window.dead_lettered"}}
	v = CompareVersions("old.json", bs, "new.json", cs, testThresholds, accepts)
	if v.Regressed() {
		t.Fatalf("regressions %q, want all accepted", v.Regressions)
	}
	wantAcc := []string{
		"delivery-limit: confirm-window: verdict fail (dead_lettered 0, expected 100): accepted: RabbitMQ 4.3 does not count nack-requeue toward x-delivery-limit (accept.yaml:2)",
		`delivery-limit: confirm-window: dead-lettered 100 → 0: accepted: stated for RabbitMQ 4.3.6 by the candidate's version scope ">=4.3": rabbitmq-server#13200`,
	}
	if !slices.Equal(v.Accepted, wantAcc) {
		t.Fatalf("accepted\n%q\nwant\n%q", v.Accepted, wantAcc)
	}
	if got := statuses(v); got["deliveries_per_message"] != StatusChanged {
		t.Fatalf("deliveries_per_message %q: not stated, not accepted: want changed", got["deliveries_per_message"])
	}
	if want := []string{"accept.yaml:6: the accept entry (kill-mid-burst, any mode, lost) matched no difference."}; !slices.Equal(v.Notes, want) {
		t.Fatalf("notes %q, want %q", v.Notes, want)
	}
	// An entry for another mode does not accept this one.
	other := accepts[:1:1]
	other[0].Mode = scenario.ConfirmEach
	cand.VersionScope = nil
	if v = CompareVersions("old.json", bs, "new.json", cs, testThresholds, other); !slices.Equal(v.Regressions, wantReg) {
		t.Fatalf("accept for confirm-each accepted confirm-window: %q", v.Regressions)
	}
}

// Of several results of one scenario on a side the newest is compared,
// and the note names the ones left out.
func TestCompareVersionsNewest(t *testing.T) {
	older, newer := scenResult("kill-mid-burst", "RabbitMQ 4.0.5", "", confirmMode()), scenResult("kill-mid-burst", "RabbitMQ 4.0.5", "", confirmMode())
	older.StartedAt = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	newer.StartedAt = older.StartedAt.Add(time.Hour)
	v := CompareVersions("old", []NamedResult{named("a/result.json", newer), named("b/result.json", older)}, "new",
		[]NamedResult{named("c/result.json", scenResult("kill-mid-burst", "RabbitMQ 4.0.5", "", confirmMode()))}, testThresholds, nil)
	want := []string{"The baseline holds 2 results of kill-mid-burst: compared the newest, a/result.json; left out b/result.json."}
	if !slices.Equal(v.Notes, want) || v.Pairs[0].BaselineFile != "a/result.json" {
		t.Fatalf("notes %q pair %+v", v.Notes, v.Pairs[0])
	}
}

func TestParseAccept(t *testing.T) {
	got, err := ParseAccept("a.yaml", []byte("# upgrade 4.0 → 4.3\naccept:\n  - scenario: delivery-limit\n    field: dead_lettered\n    because: release notes\n  - {scenario: kill-mid-burst, mode: fire-and-forget, field: unconfirmed_missing, because: \"issue 13\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Accept{
		{Scenario: "delivery-limit", Field: "dead_lettered", Because: "release notes", File: "a.yaml", Line: 3},
		{Scenario: "kill-mid-burst", Mode: scenario.FireAndForget, Field: "unconfirmed_missing", Because: "issue 13", File: "a.yaml", Line: 6},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got, err := ParseAccept("a.yaml", []byte("accept: []\n")); err != nil || len(got) != 0 {
		t.Fatalf("an empty list: %v %v", got, err)
	}
}

// Every bad accept file is refused with file:line and the field path; all
// problems at once, in line order.
func TestParseAcceptBad(t *testing.T) {
	entry := "accept:\n  - scenario: delivery-limit\n    field: dead_lettered\n    because: release notes\n"
	cases := []struct{ name, yaml, want string }{
		{"empty", "", "a.yaml: empty: want \"accept:\" and a list of entries {scenario, mode, field, because}"},
		{"comment only", "# nothing\n", "a.yaml: empty: want \"accept:\" and a list of entries {scenario, mode, field, because}"},
		{"syntax", "accept:\n  - scenario: x\n    field: a: b\n", "a.yaml:3: mapping values are not allowed in this context"},
		{"a list at the top", "- scenario: x\n", "a.yaml:1: want a mapping with \"accept:\", got a list"},
		{"no accept", "accepted: []\n", "a.yaml:1: accepted: unknown field: an accept file holds only accept; did you mean accept?"},
		{"accept a mapping", "accept:\n  scenario: x\n", "a.yaml:2: accept: want a list of entries {scenario, mode, field, because}, got a mapping"},
		{"entry a string", "accept:\n  - delivery-limit\n", "a.yaml:2: accept[0]: want an entry {scenario, mode, field, because}, got \"delivery-limit\""},
		{"unknown key", entry + "    feild: lost\n", "a.yaml:5: accept[0].feild: unknown field (scenario, mode, field, because); did you mean field?"},
		{"unknown field", strings.Replace(entry, "dead_lettered", "dead_letter", 1), "a.yaml:3: accept[0].field: \"dead_letter\" is not a field compare shows (present, verdict, lost, unconfirmed_missing, in_doubt, nacked, returned, duplicates, dead_lettered, deliveries_per_message, dead_letter_reason, x_death_count_at_park, pre_fault_publish_rate_msgs_per_s, confirm_rate_msgs_per_s, confirm_latency_ms.p99, client_recovery_ms); did you mean dead_lettered?"},
		{"bad mode", entry + "    mode: confirm-eahc\n", "a.yaml:5: accept[0].mode: \"confirm-eahc\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional); did you mean confirm-each?"},
		{"no because", "accept:\n  - scenario: delivery-limit\n    field: lost\n", "a.yaml:2: accept[0].because: missing: say why the difference is expected: release notes, an issue or a pull request"},
		{"blank because", entry[:len(entry)-len("release notes\n")] + "\"  \"\n", "a.yaml:4: accept[0].because: empty: say why the difference is expected: release notes, an issue or a pull request"},
		{"no scenario", "accept:\n  - field: lost\n    because: x\n", "a.yaml:2: accept[0].scenario: missing: name the scenario whose difference is accepted"},
		{"field a list", "accept:\n  - scenario: s\n    field: [lost]\n    because: x\n", "a.yaml:3: accept[0].field: want a string, got a list"},
		{"because null", "accept:\n  - scenario: s\n    field: lost\n    because:\n", "a.yaml:4: accept[0].because: want a string, got nothing"},
		{"key twice", entry + "    field: lost\n", "a.yaml:5: accept[0].field: given twice (first on line 3)"},
		{"same entry twice", entry + strings.TrimPrefix(entry, "accept:\n"), "a.yaml:5: accept[1]: the same scenario, mode and field as accept[0] (line 2)"},
		{"two documents", entry + "---\naccept: []\n", "a.yaml:5: a second YAML document: an accept file holds one"},
	}
	for _, tc := range cases {
		_, err := ParseAccept("a.yaml", []byte(tc.yaml))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		if first != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, first, tc.want)
		}
	}
	// Several problems: all of them, in line order.
	_, err := ParseAccept("a.yaml", []byte("accept:\n  - scenario: s\n    field: lots\n  - mode: fast\n    field: lost\n    because: x\n"))
	var errs scenario.Errors
	if !errors.As(err, &errs) || len(errs) != 4 {
		t.Fatalf("%v", err)
	}
	want := []string{
		"a.yaml:2: accept[0].because: missing: say why the difference is expected: release notes, an issue or a pull request",
		"a.yaml:3: accept[0].field: \"lots\" is not a field compare shows (present, verdict, lost, unconfirmed_missing, in_doubt, nacked, returned, duplicates, dead_lettered, deliveries_per_message, dead_letter_reason, x_death_count_at_park, pre_fault_publish_rate_msgs_per_s, confirm_rate_msgs_per_s, confirm_latency_ms.p99, client_recovery_ms); did you mean lost?",
		"a.yaml:4: accept[1].mode: \"fast\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional)",
		"a.yaml:4: accept[1].scenario: missing: name the scenario whose difference is accepted",
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Fatalf("errors\n%q\nwant\n%q", got, want)
	}
}

// TestCompareVersionsGolden pins the cross-version markdown and JSON:
// delivery-limit on 4.0 and 4.3 with one accepted and one stated
// difference, kill-mid-burst with a throughput regression, one scenario
// unpaired. Run with -update after an intended change.
func TestCompareVersionsGolden(t *testing.T) {
	dlB := scenResult("delivery-limit", "RabbitMQ 4.0.5", "rmqtorture/rabbitmq:4.0-trixie", deliveryLimit(100, "4", scenario.Pass))
	dlC := scenResult("delivery-limit", "RabbitMQ 4.3.6", "rmqtorture/rabbitmq:4.3-forky", deliveryLimit(0, "31600", scenario.Fail))
	dlC.VersionScope = &scenario.AppliedVersionScope{BrokerVersion: "RabbitMQ 4.3.6", When: ">=4.3", Because: "rabbitmq-server#13200", Stated: []string{"confirm-window.dead_lettered"}}
	dlB.VersionScope = &scenario.AppliedVersionScope{BrokerVersion: "RabbitMQ 4.0.5", When: "<4.3", Because: "rabbitmq-server PR #11937", Stated: []string{"confirm-window.dead_lettered"}}
	kb := confirmMode()
	kc := confirmMode()
	kc.PreFaultPublishRate, kc.ConfirmLatency.P99, kc.InDoubt = 700, 5, 3
	kB := scenResult("kill-mid-burst", "RabbitMQ 4.0.5", "rmqtorture/rabbitmq:4.0-trixie", fireMode(), kb)
	kC := scenResult("kill-mid-burst", "RabbitMQ 4.3.6", "rmqtorture/rabbitmq:4.3-forky", fireMode(), kc)
	rB := scenResult("retry-to-dlq", "RabbitMQ 4.0.5", "rmqtorture/rabbitmq:4.0-trixie", confirmMode())
	accepts := []Accept{{Scenario: "delivery-limit", Field: "verdict", Because: "RabbitMQ 4.3 does not count nack-requeue toward the limit", File: "accept.yaml", Line: 2}}
	v := CompareVersions("old-runs/", []NamedResult{named("old-runs/dl/result.json", dlB), named("old-runs/k/result.json", kB), named("old-runs/r/result.json", rB)},
		"new-runs/", []NamedResult{named("new-runs/dl/result.json", dlC), named("new-runs/k/result.json", kC)}, testThresholds, accepts)
	v.AcrossVersions = true
	var md, js bytes.Buffer
	if err := CompareVersionsMarkdown(&md, v); err != nil {
		t.Fatal(err)
	}
	if err := CompareVersionsJSON(&js, v); err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		file string
		got  []byte
	}{{"testdata/compare-versions.golden.md", md.Bytes()}, {"testdata/compare-versions.golden.json", js.Bytes()}} {
		if *update {
			if err := os.WriteFile(g.file, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(g.file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g.got, want) {
			t.Errorf("output differs from %s (run go test ./reports -run Golden -update and review the diff):\n%s", g.file, g.got)
		}
	}
	// Without --across-versions the same comparison warns in its markdown.
	v.AcrossVersions = false
	md.Reset()
	if err := CompareVersionsMarkdown(&md, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "\n**Warning:** baseline ran RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate RabbitMQ 4.3.6 (rmqtorture/rabbitmq:4.3-forky): differences may be the broker's, not your change.\n") || !strings.HasPrefix(md.String(), "## rmqtorture compare\n") {
		t.Fatalf("markdown without --across-versions:\n%s", md.String())
	}
}

// TestCompareVersionsWhoDeadLettered: the dead-letter reason and the x-death
// count at park are compared like counts: 4.0.5's broker dead-letters
// (delivery_limit), 4.3.6's consumer gives up (rejected); 3 deaths at park
// become 1.
func TestCompareVersionsWhoDeadLettered(t *testing.T) {
	b := scenario.ModeResult{Mode: scenario.ConfirmWindow, DeadLetterReasons: map[string]int{"delivery_limit": 100},
		Consumers: &scenario.ConsumerStats{XDeathCountAtPark: map[string]int{"3": 100}}}
	r := scenario.ModeResult{Mode: scenario.ConfirmWindow, DeadLetterReasons: map[string]int{"rejected": 60, "delivery_limit": 40},
		Consumers: &scenario.ConsumerStats{XDeathCountAtPark: map[string]int{"1": 100}}}
	var got []string
	for _, c := range countChanges("delivery-limit", "confirm-window", b, r) {
		got = append(got, c.Field+": "+c.Sentence)
	}
	want := []string{
		"x_death_count_at_park: delivery-limit: confirm-window: x-death count at park 3 (100 messages) → 1 (100 messages)",
		"dead_letter_reason: delivery-limit: confirm-window: dead-letter reason delivery_limit → delivery_limit 40, rejected 60",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompareVersionsRunNotes: pairs made with other settings carry the
// notes a plain compare gives, named by scenario (200 orders against 2,000:
// counts do not compare).
func TestCompareVersionsRunNotes(t *testing.T) {
	b := scenResult("tiny", "RabbitMQ 4.0.5", "rmqtorture/rabbitmq:4.0-trixie", confirmMode())
	c := scenResult("tiny", "RabbitMQ 4.3.6", "rmqtorture/rabbitmq:4.3-forky", confirmMode())
	b.Messages, c.Messages = 200, 2000
	v := CompareVersions("old/", []NamedResult{named("old/r.json", b)}, "new/", []NamedResult{named("new/r.json", c)}, testThresholds, nil)
	want := "tiny: The baseline published 200 orders per mode, the result 2,000: rates, latencies and the missing share compare, counts do not."
	if !slices.Contains(v.Notes, want) {
		t.Fatalf("notes %q lack %q", v.Notes, want)
	}
}
